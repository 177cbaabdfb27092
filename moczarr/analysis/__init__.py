"""After the open: cross-resolution joins, cell centres and maps, occupancy from the bitmaps, ragged decoders."""
