"""The openers: ``open_hive``, ``open_leaf``, ``open_level``, ``open_pyramid``, ``open_store`` and ``time=``."""
