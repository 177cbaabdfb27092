"""moczarr_intake.pgstac."""
