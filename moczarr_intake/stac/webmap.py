"""Web-map links and renders: a catalog's Items and Collections pointing at a moczarr tile server (``--tiles-url``).

The tile server is titiler's ``TilerFactory`` over moczarr's rio-tiler reader,
so its routes are titiler's (titiler.core 2.x, at the factory's base URL):
``/tiles/{tileMatrixSetId}/{z}/{x}/{y}.png``, ``/{tileMatrixSetId}/tilejson.json``
and, from titiler's ``wmtsExtension``, ``/WMTSCapabilities.xml`` (one
document for every grid, whose layers titiler names
``{url}_{tileMatrixSetId}_default``), each taking ``url=`` (the store's
published address) and the reader's and renderer's query parameters.

Each hive level Item and each product Collection gets, in its ``links``
(web-map-links extension v1.2.0), and in ``renders`` (render extension v2.0.0):

- for ``WebMercatorQuad`` (what web maps draw; it reaches ±85.0511° of
  latitude only) an ``xyz`` link (a ``{z}/{x}/{y}`` template of PNG tiles),
  a ``tilejson`` link and a ``wmts`` link;
- for ``UPSArcticWGS84Quad`` / ``UPSAntarcticWGS84Quad`` a ``wmts`` link
  (whose capabilities declare the grid: ``xyz`` and TileJSON clients assume
  Web Mercator), when the product's footprint reaches north of 60°N / south
  of 60°S: the area of use of their CRSs, EPSG:5041 and EPSG:5042 (UPS North
  and South);
- one render, keyed by its variable: ``assets: ["data"]``, the tiler's
  ``variable`` (and on an Item its ``cell_order`` and ``window``: the layer
  is exactly the Item's level), ``rescale`` and ``colormap_name``. Each link
  names it (``render``) and carries the same parameters in its URL.

The variable is the first the tiler can draw (dense, on ``cells`` alone,
numeric) in the order of the document's ``cube:variables`` (the manifest's), a
float one first: the rule the quicklooks follow, so their read describes it.
The rescale is the range of the level's values that the quicklook drawn
for that Item read (the 2nd and 98th percentiles, :func:`.thumbnails.value_range`):
a build reads no other data for it. An Item whose level was not drawn (a
build without ``--thumbnails``, or a level over :data:`.thumbnails.MAX_CELLS`
cells) takes the range over its product's drawn levels of that variable; a
Collection takes that range too. With no drawn level of the variable, the
render and links have no rescale (numbers are never made up) and the build
says so in a note. A Collection's layer has no ``cell_order`` (the server
picks a level per zoom); a windowed product's Collection shows its last
window. All-time Items get none (the tiler reads windows), nor do moraine
pyramids (the tiler reads morton-hive stores).
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from moczarr.errors import ArgumentError
from moczarr.metadata import is_remote, join_location

from .documents import Node
from .thumbnails import MAX_CELLS

WEB_MAP_LINKS = "https://stac-extensions.github.io/web-map-links/v1.2.0/schema.json"
RENDER = "https://stac-extensions.github.io/render/v2.0.0/schema.json"
WEB_MERCATOR = "WebMercatorQuad"
#: the polar grids, each with the latitude its footprint must reach beyond: the area of use of EPSG:5041 / 5042
POLAR_GRIDS = (("UPSArcticWGS84Quad", 60.0), ("UPSAntarcticWGS84Quad", -60.0))
#: the render's colormap (a perceptually uniform one, titiler's name)
COLORMAP = "viridis"
#: the asset a render draws from (the store root, which ``url=`` names)
ASSET = "data"
_NUMERIC = re.compile(r"u?int(8|16|32|64)|float(16|32|64)")


def render_variable(variables: dict[str, dict]) -> str | None:
    """The first variable of a ``cube:variables`` map the tiler can draw (dense, on ``cells`` alone, numeric), a
    float one first; None when there is none."""
    drawable = [
        name
        for name, v in variables.items()
        if v.get("moczarr:kind") == "dense" and v.get("dimensions") == ["cells"] and _NUMERIC.fullmatch(v["data_type"])
    ]
    floats = [name for name in drawable if variables[name]["data_type"].startswith("float")]
    return next(iter(floats or drawable), None)


def grids(bbox: list[float] | None) -> list[str]:
    """The tile matrix sets a footprint of box ``bbox`` (``[west, south, east, north]``, None: unknown) is linked in:
    Web Mercator always, a polar grid where the box reaches beyond its latitude."""
    out = [WEB_MERCATOR]
    if bbox is not None:
        south, north = bbox[1], bbox[3]
        out += [name for name, lat in POLAR_GRIDS if (north > lat if lat > 0 else south < lat)]
    return out


def tile_query(params: dict) -> str:
    """``params`` (None values left out) as a query string, every value percent-encoded."""
    return urlencode([(k, v) for k, v in params.items() if v is not None], quote_via=quote, safe="")


def web_map_links(tiles_url: str, params: dict, tms_ids: list[str], render: str, title: str) -> list[dict]:
    """The web-map links of one layer: ``xyz``, ``tilejson`` and ``wmts`` in Web Mercator, ``wmts`` in the other
    grids of ``tms_ids``; ``params``: the tiler's query parameters (``url`` first)."""
    query = tile_query(params)
    links = [
        {
            "rel": "xyz",
            "href": f"{tiles_url}/tiles/{WEB_MERCATOR}/{{z}}/{{x}}/{{y}}.png?{query}",
            "type": "image/png",
            "title": f"{title} (Web Mercator tiles)",
            "render": render,
        },
        {
            "rel": "tilejson",
            "href": f"{tiles_url}/{WEB_MERCATOR}/tilejson.json?{query}",
            "type": "application/json",
            "title": f"{title} (TileJSON, Web Mercator)",
            "render": render,
        },
    ]
    links += [
        {
            "rel": "wmts",
            "href": f"{tiles_url}/WMTSCapabilities.xml?{query}",
            "type": "application/xml",
            "title": f"{title} (WMTS, {tms})",
            "wmts:layer": f"{params['url']}_{tms}_default",
            "render": render,
        }
        for tms in tms_ids
    ]
    return links


def add_web_maps(top: Node, tiles_url: str, base: str | None) -> list[str]:
    """Add the web-map links and the render of every product Collection and level Item below ``top`` (placed,
    linked and with their store addresses spelled); ``base``: the catalog folder's URL or path.

    Returns one note per Collection whose variable no quicklook drew (its renders have no rescale). Raises
    :class:`~moczarr.errors.ArgumentError` for a store whose address is a path of this machine (or relative
    in a catalog without a URL): the tile server could not open it.
    """
    notes = []
    for node in top.walk():
        if node.kind != "collection" or node.kept or node.product is None:
            continue
        doc = node.doc
        tms_ids = grids(node.product.bbox)
        ranges = _ranges(node)
        variable = _collection_variable(doc)
        if variable is not None:
            windows = node.product.summary.windows if node.product.summary.windowed else []
            layer = {"window": windows[-1] if windows else None}
            _add(node, tiles_url, base, variable, layer, ranges.get(variable), tms_ids)
            if variable not in ranges:
                notes.append(
                    f"tiles: {doc['id']}: no quicklook drew {variable} (build with --thumbnails; levels over "
                    f"{MAX_CELLS:,} cells are not drawn): its renders have no rescale"
                )
        for item in node.items:
            hint = item.doc["assets"][ASSET]["xarray:open_kwargs"]
            variable = render_variable(item.doc["properties"]["cube:variables"])
            if variable is None or hint.get("all_time"):
                continue
            drawn = item.quicklook
            own = _usable(drawn.value_range) if drawn is not None and drawn.variable == variable else None
            layer = {"cell_order": hint["cell_order"], "window": hint.get("window")}
            _add(item, tiles_url, base, variable, layer, own or ranges.get(variable), tms_ids)
    return notes


def _collection_variable(doc: dict) -> str | None:
    """The Collection's variable: of those every level holds if one is drawable, else of any level."""
    variables = doc.get("cube:variables") or {}
    levels = doc.get("moczarr:levels") or []
    everywhere = {n: v for n, v in variables.items() if all(n in lv["variables"] for lv in levels)}
    return render_variable(everywhere) or render_variable(variables)


def _usable(span: tuple[float, float] | None) -> tuple[float, float] | None:
    """``span`` when it is a range a tiler can rescale by (a constant level has none)."""
    return span if span is not None and span[1] > span[0] else None


def _ranges(collection: Node) -> dict[str, tuple[float, float]]:
    """Variable -> the range over the Collection's drawn levels of it."""
    out: dict[str, tuple[float, float]] = {}
    for item in collection.items:
        drawn = item.quicklook
        span = _usable(drawn.value_range) if drawn is not None else None
        if drawn is None or span is None:
            continue
        low, high = out.get(drawn.variable, span)
        out[drawn.variable] = (min(low, span[0]), max(high, span[1]))
    return out


def _add(node: Node, tiles_url: str, base, variable: str, layer: dict, span, tms_ids: list[str]) -> None:
    """The links and render of one document's layer (``layer``: its ``cell_order`` and ``window``, or None)."""
    doc = node.doc
    fields = doc["properties"] if node.kind == "item" else doc
    units = fields.get("cube:variables", {}).get(variable, {}).get("unit")
    title = variable + (f" ({units})" if units else "")
    if layer.get("cell_order") is not None:
        title += f" at cell order {layer['cell_order']}"
    if layer.get("window"):
        title += f", window {layer['window']}"
    rescale = f"{span[0]},{span[1]}" if span is not None else None
    params = {"url": _store_url(node, base), "variable": variable, **layer}
    params.update(rescale=rescale, colormap_name=COLORMAP)
    render: dict = {"assets": [ASSET], "title": title, "variable": variable}
    render.update({k: v for k, v in layer.items() if v is not None})
    if span is not None:
        render["rescale"] = [[span[0], span[1]]]
    render["colormap_name"] = COLORMAP
    doc["links"] = doc["links"] + web_map_links(tiles_url, params, tms_ids, variable, title)
    extensions = sorted({*doc.get("stac_extensions", []), WEB_MAP_LINKS, RENDER})
    if node.kind == "item":
        fields["renders"] = {variable: render}
        doc["stac_extensions"] = extensions
    else:  # where pystac writes them: the extensions after the links, the renders last of the extra fields
        _put(doc, "stac_extensions", extensions, after="links")
        _put(doc, "renders", {variable: render}, after="item_assets")


def _put(doc: dict, key: str, value, *, after: str) -> None:
    """Set ``doc[key]``, a new key placed right after ``after``, as pystac's ``to_dict`` orders the keys."""
    if key in doc:
        doc[key] = value
        return
    names = list(doc)
    rest = {name: doc.pop(name) for name in names[names.index(after) + 1 :]}
    doc[key] = value
    doc.update(rest)


def _store_url(node: Node, base: str | None) -> str:
    """The published address of the store a document's ``data`` asset names: its URL, or its relative href
    resolved against the document's own URL. Raises :class:`ArgumentError` when it has none."""
    href = node.doc["assets"][ASSET]["href"]
    if is_remote(href):
        return href
    if base is not None and is_remote(base) and href.startswith(("./", "../")):
        return join_location(f"{base}/{node.path}", "..", href)
    raise ArgumentError(
        f"--tiles-url: {node.doc['id']} names its store as {href!r}, which a tile server cannot open: "
        "give --href-base (the URL the stores are served at)"
    )
