"""moczarr_intake.intake_yaml."""
