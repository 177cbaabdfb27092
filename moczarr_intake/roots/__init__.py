"""moczarr_intake.roots."""
