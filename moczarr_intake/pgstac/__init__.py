"""Into a STAC API database: the pgstac ndjson every build writes, and the upsert of a catalog into pgstac."""
