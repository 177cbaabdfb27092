"""The Intake YAML documents (version 1 drivers, version 2 readers) and the block-YAML text they are written as."""
