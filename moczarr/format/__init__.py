"""The on-disk format: bytes to validated records, no xarray.

The manifest and its window spans, the product roster, coverage decoders (root
MOC, tier-0 box, bitmap) and the AOI intersection, commit stamps, version
pointers and the discovery walk, the pyramid declaration and resolution table,
the checks of array metadata and stamp fields before use, and the O11 content
hashes (the one definition the reader's chunk check and the verifier share). Each decoder
raises a :class:`moczarr.errors.ContentError` naming the object it read.
"""
