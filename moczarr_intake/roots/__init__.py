"""Finding store roots below a folder or bucket prefix (discover) and reading their facts (scan)."""
