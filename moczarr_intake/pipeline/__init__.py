"""moczarr_intake.pipeline."""
