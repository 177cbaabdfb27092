"""The data plane and assembly: batched chunk reads and decoding, picks, and one ``Dataset`` with a ``cells`` dimension."""
