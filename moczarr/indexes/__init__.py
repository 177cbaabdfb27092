"""Rank space: :class:`MortonRanges` (interval sets of rows) and the lazy :class:`MortonMocIndex`."""
