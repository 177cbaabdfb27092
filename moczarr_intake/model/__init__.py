"""moczarr_intake.model."""
