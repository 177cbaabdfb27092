"""The store metadata a catalog needs, as one documented public namespace.

Catalog builders (``moczarr_intake``, or a portal's own) read stores only
through this module and the top-level ``moczarr`` API:

- :func:`summarize_store` and its records (:class:`StoreSummary`,
  :class:`ProductSummary`, :class:`LevelInfo`, :class:`VariableInfo`): a
  bounded number of small GETs per product, whatever the leaf count;
- footprints: :func:`footprint_geometry`, :func:`geometry_bbox`
  (antimeridian- and pole-safe);
- locations: :func:`normalize_location`, :func:`join_location`,
  :func:`is_remote`, :func:`protocol`;
- time: :func:`window_interval` (the span of a window label), :func:`parse_time`;
- ids: :func:`to_words`, :func:`to_decimals`;
- the names of the root objects: :data:`MANIFEST_NAME`, :data:`ROOT_MOC_NAME`;
- :func:`warn`: emit a warning at the user's line, however deep the catalog code is;
- :class:`Scanner`: listings (:class:`Entries`) and summaries of many stores below one location through one
  client and one in-flight limit; :func:`split_location` (the bucket of a URL);
- :class:`Writer`: the catalog's output (whole-object PUTs and DELETEs with the read path's bounds).

Each name is imported on first use, like the top-level API (the table is ``__init__.pyi``).
"""

from .._lazy import attach_stub

__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)
