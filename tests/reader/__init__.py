"""Tests of the reader, ``moczarr``: storage, places, the format, the data plane, the openers, verify, moraine
and the sample writers of ``moczarr.testing``."""
