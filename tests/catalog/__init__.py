"""Tests of the catalog, ``moczarr_intake``: the Intake plugins, STAC, roots, the living catalog, pgstac, the
library and the ``moczarr-catalog`` command."""
