"""Build STAC Collections and Items from store summaries, and assemble them into a static catalog.

Mapping (``docs/stac.md`` has the full table):

- a multi-product root -> a ``Catalog`` (a child of the top catalog);
- a product (the one product of a bare store, or one product of a multi-product
  root) -> a ``Collection``;
- a resolution level of a product -> an ``Item`` per window on windowed
  products (``{collection}-o{r}-{window}``; overview levels also get an
  ``{collection}-o{r}-all`` Item when the pyramid declares all-time folds), one
  Item otherwise (``{collection}-o{r}``).

Every store fact comes from :func:`moczarr.metadata.summarize_store`; building
a catalog makes no request beyond the summaries'. Each Item's and Collection's
``data`` asset carries a ``moczarr:open`` hint that :mod:`.open` follows back.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pystac
from tqdm import tqdm

from moczarr.errors import ArgumentError, MoczarrWarning
from moczarr.metadata import ProductSummary, StoreSummary, is_remote, normalize_location, summarize_store, warn

from ..model.access import is_http
from ..model.entries import CatalogEntries, catalog_entries
from ..model.hrefs import HrefPolicy
from ..model.naming import root_labels, slug
from . import documents as docs
from . import save, webmap
from .fields import asset_sizes, make_product, product_title
from .geoparquet import STRUCTURAL_RELS, ApiDocuments, PendingApiOutputs, check_api_names, start_api_outputs
from .moraine import moraine_stac_item


@dataclass
class StacCatalog:
    """A catalog's documents (:class:`.documents.Node`, from the root), as written.

    ``base``: the absolute path or URL of the catalog folder (None: not
    written, no document has a place); ``documents``: the location-free
    copies of its Collections and Items (:func:`.save.api_documents`, those an
    update keeps left out), once written; ``notes``: lines the build reports about them.
    """

    top: docs.Node
    base: str | None = None
    documents: ApiDocuments | None = None
    #: what the build says of its documents (a render without rescale, :func:`.webmap.add_web_maps`)
    notes: list[str] = field(default_factory=list)

    def self_hrefs(self) -> dict[str, str]:
        """``{id: where its document lives}`` of every Collection (kept ones too) and of the root's Items."""
        assert self.base is not None  # only a written catalog has places
        base = self.base
        out = {n.doc["id"]: save.self_href(n, base) for n in self.top.walk() if n.kind == "collection"}
        out.update({n.doc["id"]: save.self_href(n, base) for n in self.top.items})
        return out

    def collection_ids(self) -> list[str]:
        """The ids of every Collection, kept ones too, in the order of pystac's ``get_all_collections``."""
        return [doc["id"] for doc in self._collections(self.top)]

    def _collections(self, node: docs.Node) -> list[dict]:
        out = [c.doc for c in node.children if c.kind == "collection"]
        for child in node.children:
            out += self._collections(child)
        return out

    def to_pystac(self) -> pystac.Catalog:
        """The catalog as pystac objects (self hrefs set once written): for reading it back, not for writing."""
        objects: dict[int, Any] = {}  # id(node) -> its pystac object
        for node in self.top.walk():
            obj = _pystac_object(node)
            objects[id(node)] = obj
            if node.parent is not None:
                parent = objects[id(node.parent)]
                if node.kind == "item":
                    parent.add_item(obj, title=node.title)
                else:
                    _adopt(parent, obj)
        top = objects[id(self.top)]
        if self.base is not None:
            for node in self.top.walk():
                objects[id(node)].set_self_href(save.self_href(node, self.base))
            published = is_remote(self.base)
            top.catalog_type = pystac.CatalogType.RELATIVE_PUBLISHED if published else pystac.CatalogType.SELF_CONTAINED
        return top


def _pystac_object(node: docs.Node) -> Any:
    """The pystac object of one document, without the links that place it (the license link kept)."""
    if node.kept:
        return pystac.Collection(
            id=node.doc["id"],
            description="kept from the previous build (never written)",
            extent=pystac.Extent(pystac.SpatialExtent([docs.WHOLE_SPHERE]), pystac.TemporalExtent([None, None])),
            title=node.title,
        )
    links = [x for x in node.doc["links"] if x["rel"] not in STRUCTURAL_RELS]
    if not node.doc["links"] and node.license_link:  # not linked yet (not written)
        links.append(node.license_link)
    cls: Any = {"catalog": pystac.Catalog, "collection": pystac.Collection, "item": pystac.Item}[node.kind]
    return cls.from_dict({**node.doc, "links": links}, migrate=False)


def _adopt(parent: pystac.Catalog, child: pystac.Catalog) -> None:
    """``parent.add_child(child, title=child.title)``, in time linear in the catalog's size.

    pystac's ``Catalog.set_root`` (called by ``add_child``) copies the root's
    whole resolved-object cache for every child, so n children cost O(n²)
    (pystac issue #1207). That cache serves links resolved by href, which a
    catalog assembled here never has: the root is set on the child and
    everything below it without the copy.
    """
    root = parent.get_root()
    below: list[pystac.STACObject] = [child]
    while below:
        obj = below.pop()
        pystac.STACObject.set_root(obj, root)
        below.extend(
            link.target
            for link in obj.links
            if link.rel in (pystac.RelType.CHILD, pystac.RelType.ITEM) and isinstance(link.target, pystac.STACObject)
        )
    child.set_parent(parent)
    parent.add_link(pystac.Link.child(child, title=child.title))


def product_collection(
    product: ProductSummary,
    *,
    collection_id: str | None = None,
    store_root: str | None = None,
    products_arg: list[str] | None = None,
    sizes: dict[str, int | None] | None = None,
    storage_options: dict | None = None,
) -> pystac.Collection:
    """The Collection of one product, with one Item per level (and window). Makes no request.

    ``store_root``/``products_arg`` are what the Collection's open hint hands
    to ``open_store`` (default: the product's own root). ``sizes`` maps
    ``"manifest"``/``"coverage"`` to byte sizes (None: present, size unknown);
    without it the metadata assets are listed when the summary shows them
    (manifest always; coverage when usable) without ``file:size``.
    ``storage_options`` feeds the storage extension and the Items'
    ``xarray:storage_options`` (only :func:`moczarr_intake.access.public_storage_options`; nothing secret).
    """
    if sizes is None:
        sizes = {"manifest": None, **({"coverage": None} if product.coverage_usable else {})}
    prod = make_product(
        product, collection_id or slug(product.name), store_root or product.root, products_arg, sizes, storage_options
    )
    collection = StacCatalog(docs.collection(prod)).to_pystac()
    assert isinstance(collection, pystac.Collection)
    return collection


def build_stac(
    roots=None,
    out_dir: str | os.PathLike | None = None,
    *,
    storage_options: dict | None = None,
    catalog_id: str = "moczarr",
    title: str | None = None,
    thumbnails: bool = False,
    summaries: Iterable[StoreSummary] | None = None,
    moraine: Iterable = (),
    progress: bool | Callable[[str, str], None] | None = None,
    relative_to: str | os.PathLike | None = None,
    policy: HrefPolicy | None = None,
    catalog_url: str | None = None,
    license: str | None = None,
    license_url: str | None = None,
    dest_dir: str | os.PathLike | None = None,
    api_outputs: bool = True,
    keep: Collection[str] = (),
    entries: CatalogEntries | None = None,
    tiles_url: str | None = None,
) -> pystac.Catalog:
    """A static STAC catalog over one or many morton-hive store roots (local or URLs) and moraine pyramids.

    ``roots``: a root, or a list of roots (an element may also be a
    :class:`StoreSummary`); ``summaries``: summaries already made, added after
    ``roots``. Each multi-product root becomes a child Catalog holding one
    Collection per product; each bare store becomes a Collection under the top
    Catalog. Ids come from :func:`moczarr_intake.naming.product_ids`: product
    names, prefixed with the root's shortest unique path label when two stores
    hold products of one name. ``moraine``: :class:`moczarr.moraine.MorainePyramid`
    infos, each added as an Item under the top Catalog.

    When ``out_dir`` is given the catalog is saved there: store addresses are
    spelled by ``policy`` (default: relative for stores inside ``relative_to``,
    else absolute; see :class:`moczarr_intake.hrefs.HrefPolicy` and its
    ``href_base``), the catalog is SELF_CONTAINED, or RELATIVE_PUBLISHED under
    ``catalog_url`` (an absolute self link on every Catalog and Collection).
    ``thumbnails=True`` (needs ``out_dir``) reads each level once and writes a
    quicklook PNG per Item (and per Collection). ``license``/``license_url``:
    used where the manifest records none. ``progress``: True for a progress bar
    over products (stderr), or a callable ``progress(kind, name)``.
    ``dest_dir``: write the files there (hrefs still those of ``out_dir``).
    With ``api_outputs`` (the default) the STAC API outputs are written beside
    the catalog (:func:`.geoparquet.write_api_outputs`: ``api-items/*.parquet``
    and ``api-collections/*.json``) unless a document would name a path of this
    machine, which a :class:`moczarr.errors.MoczarrWarning` then says; they are
    written while the documents are. ``keep``: ids of Collections and moraine Items whose
    documents an earlier build wrote and this one leaves as they are (an
    update that rewrites only the changed products, :mod:`moczarr_intake.reuse`):
    a kept Collection is a stand-in with its id and title, so the documents
    above it link to it as a full build does; neither it nor a kept moraine
    Item is written, drawn or listed in the STAC API outputs. ``entries``: the
    products and pyramids already named (:func:`~moczarr_intake.entries.catalog_entries`
    of ``summaries`` and ``moraine``, e.g. with the ids a previous build
    recorded); by default they are named here. ``tiles_url`` (needs
    ``out_dir``): the base URL of a moczarr tile server, to which every
    product Collection and level Item gets web-map links and a render
    (:mod:`.webmap`; their rescale from the quicklooks' read). Returns the top
    Catalog (pystac objects: :func:`write_stac` writes the same without them).
    Without thumbnails no request is made beyond the summaries'.
    Raises :class:`moczarr.errors.ArgumentError` for no root, a root given
    twice, thumbnails or ``tiles_url`` without ``out_dir``, or ``tiles_url``
    with a store whose address is a path of this machine.
    """
    stac = write_stac(
        roots, out_dir, storage_options=storage_options, catalog_id=catalog_id, title=title, thumbnails=thumbnails,
        summaries=summaries, moraine=moraine, progress=progress, relative_to=relative_to, policy=policy,
        catalog_url=catalog_url, license=license, license_url=license_url, dest_dir=dest_dir,
        api_outputs=api_outputs, keep=keep, entries=entries, tiles_url=tiles_url,
    )  # fmt: skip
    return stac.to_pystac()


def write_stac(
    roots=None,
    out_dir: str | os.PathLike | None = None,
    *,
    storage_options: dict | None = None,
    catalog_id: str = "moczarr",
    title: str | None = None,
    thumbnails: bool = False,
    summaries: Iterable[StoreSummary] | None = None,
    moraine: Iterable = (),
    progress: bool | Callable[[str, str], None] | None = None,
    relative_to: str | os.PathLike | None = None,
    policy: HrefPolicy | None = None,
    catalog_url: str | None = None,
    license: str | None = None,
    license_url: str | None = None,
    dest_dir: str | os.PathLike | None = None,
    api_outputs: bool = True,
    before_write: Callable[[StacCatalog], None] | None = None,
    keep: Collection[str] = (),
    entries: CatalogEntries | None = None,
    tiles_url: str | None = None,
) -> StacCatalog:
    """:func:`build_stac` without pystac objects: the catalog's documents, made once as plain dicts and written.

    Takes :func:`build_stac`'s arguments, and ``before_write(catalog)``,
    called once the documents are final (placed, linked, store addresses
    spelled, :attr:`StacCatalog.documents` made) and before any is written.
    Raises what :func:`build_stac` raises.
    """
    if thumbnails and out_dir is None:
        raise ArgumentError("thumbnails=True writes PNG files: pass out_dir")
    if tiles_url and out_dir is None:
        raise ArgumentError("tiles_url links published store addresses: pass out_dir")
    moraine = list(moraine or [])
    report, bar = _progress(progress)
    stores = _store_summaries(roots, summaries, moraine, storage_options, report)
    entries = entries if entries is not None else catalog_entries(stores, moraine)
    if bar is not None:
        bar.total = len(entries.products)
        bar.refresh()
    top = docs.top_catalog(catalog_id, title, stores, moraine, len(entries.products))
    keep = frozenset(keep)
    _add_stores(top, entries, storage_options, report, keep, license=license, license_url=license_url)
    _add_moraine(top, entries, storage_options, keep)
    if bar is not None:
        bar.close()
    stac = StacCatalog(top)
    if out_dir is None:
        return stac
    out_dir = Path(out_dir)
    dest = Path(dest_dir) if dest_dir is not None else out_dir
    policy = policy or HrefPolicy(Path(relative_to) if relative_to is not None else None)
    if api_outputs:
        check_api_names(c.doc["id"] for c in top.children)
    save.place(top)
    stac.base = catalog_url.rstrip("/") if catalog_url else os.path.abspath(out_dir)
    if thumbnails:
        save.draw_thumbnails(top, dest, storage_options)
    save.spell_addresses(top, policy, out_dir)
    save.link(top, stac.base if catalog_url else None)
    if tiles_url:
        stac.notes += webmap.add_web_maps(top, tiles_url.rstrip("/"), stac.base)
    stac.documents = save.api_documents(top, stac.base, keep)
    if before_write is not None:
        before_write(stac)
    pending: PendingApiOutputs | None = None
    if api_outputs:
        pending = start_api_outputs(None, dest, stac.documents, [c.doc["id"] for c in top.children])
    save.write(top, dest)
    if pending is not None and (written := pending.wait()).skipped:
        warn(written.skipped, MoczarrWarning)
    return stac


def _store_summaries(roots, summaries, moraine, storage_options, report) -> list[StoreSummary]:
    """The summaries of ``roots`` (summarized here unless given as summaries) and ``summaries``, each root once."""
    if isinstance(roots, (str, os.PathLike, StoreSummary)):
        roots = [roots]
    given = list(roots or []) + list(summaries or [])
    if not given and not moraine:
        raise ArgumentError("build_stac needs at least one store root (or summary)")
    stores: list[StoreSummary] = []
    for root in given:
        store = root if isinstance(root, StoreSummary) else summarize_store(root, storage_options)
        stores.append(store)
        report("store", store.root)
    locations = [normalize_location(s.root) for s in stores]
    if len(set(locations)) != len(locations):
        raise ArgumentError(f"a store root is given twice: {locations}")
    return stores


def _add_stores(top: docs.Node, entries, storage_options, report, keep: frozenset[str], **license_kw) -> None:
    """A Collection per product under ``top`` (under a store Catalog for a multi-product root); a product whose
    Collection id is in ``keep`` gets a stand-in (:func:`.documents.stand_in`)."""
    stores = entries.stores
    labels = root_labels([s.root for s in stores]) if stores else []
    names = Counter(p.name for s in stores for p in s.products)
    for i, (store, store_entries) in enumerate(zip(stores, entries.by_store(), strict=True)):
        multi = store.layout == "multi"
        parent = docs.store_catalog(store, entries.sub_catalog_ids[i], labels[i]) if multi else top
        for e in store_entries:
            p = e.product
            title = product_title(p, labels[i] if names[p.name] > 1 else None)
            if e.collection_id in keep:
                parent.adopt(docs.stand_in(e.collection_id, title))
                report("product", p.root)
                continue
            products_arg = [p.name] if multi else None
            prod = make_product(
                p, e.collection_id, store.root, products_arg, asset_sizes(p), storage_options, title=title,
                store_label=labels[i],
            )  # fmt: skip
            parent.adopt(docs.collection(prod, **license_kw))
            report("product", p.root)
        if multi:
            top.adopt(parent)


def _add_moraine(top: docs.Node, entries, storage_options, keep: frozenset[str]) -> None:
    """An Item per moraine pyramid under ``top`` (a kept one is linked to, never written)."""
    for m in entries.moraine:
        item = moraine_stac_item(m.info, storage_options=storage_options)
        node = top.adopt(docs.moraine_item(item, m.item_id, m.info))
        node.kept = m.item_id in keep


def apply_href_policy(
    catalog: pystac.Catalog, policy: HrefPolicy, local_dir: Callable[[pystac.STACObject], Path] | None = None
) -> None:
    """Spell every store address of a normalized catalog by ``policy``: asset hrefs, open hints, ``moczarr:store_root``.

    ``local_dir(obj)``: the folder each document is written to (default: its self href's folder).
    A store inside the catalog folder becomes relative to each document; with
    ``href_base`` others become published URLs; URLs stay as given (see
    :class:`~moczarr_intake.hrefs.HrefPolicy` for the percent-encoding). An
    asset whose href is ``http(s)://`` loses its ``xarray:storage_options``
    (:func:`moczarr_intake.access.href_storage_options`).
    """

    def own_dir(obj: pystac.STACObject) -> Path:
        href = obj.get_self_href()
        assert href is not None  # the catalog is normalized: every document has a self href
        return Path(href).parent

    local_dir = local_dir or own_dir

    def spell(value, owner_dir: Path):
        if isinstance(value, str) and (is_remote(value) or os.path.isabs(value)):
            return policy.stac_href(value, owner_dir)
        return value

    documents: list[pystac.Catalog | pystac.Item] = [
        catalog,
        *catalog.get_children(),
        *catalog.get_all_collections(),
        *catalog.get_items(recursive=True),
    ]
    for obj in documents:
        obj_dir = local_dir(obj)
        fields = obj.properties if isinstance(obj, pystac.Item) else obj.extra_fields
        if "moczarr:store_root" in fields:
            fields["moczarr:store_root"] = spell(fields["moczarr:store_root"], obj_dir)
        for asset in getattr(obj, "assets", {}).values():
            if asset.href.startswith("./") or asset.href.startswith("../"):
                continue
            asset.href = spell(asset.href, obj_dir)
            if is_http(asset.href):  # an HTTP reader takes no S3 option: it needs only the address
                asset.extra_fields.pop("xarray:storage_options", None)
            hint = asset.extra_fields.get("moczarr:open")
            if isinstance(hint, dict):
                for key in ("store_root", "path"):
                    if key in hint.get("kwargs", {}):
                        hint["kwargs"][key] = spell(hint["kwargs"][key], obj_dir)


def _progress(progress):
    """``(report(kind, name), bar or None)`` for ``build_stac(progress=...)``."""
    if callable(progress):
        return progress, None
    if not progress:
        return (lambda kind, name: None), None
    bar = tqdm(desc="STAC products", unit="product", file=sys.stderr)

    def report(kind: str, name: str) -> None:
        if kind == "product":
            bar.set_postfix_str(name.rstrip("/").rsplit("/", 1)[-1])
            bar.update(1)

    return report, bar
