"""The data plane and assembly: batched chunk reads and decoding, picks, one ``Dataset`` with a ``cells`` dimension."""
