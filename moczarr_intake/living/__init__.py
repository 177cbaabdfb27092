"""moczarr_intake.living."""
