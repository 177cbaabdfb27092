"""Validate STAC documents offline: STAC core and every declared extension's JSON schema.

Core schemas are pystac's bundled copies; extension schemas come from a folder
(:func:`schema_dir`). A schema that is not there raises
:class:`~moczarr_intake.stac.MissingSchemaError`; nothing is ever fetched over the
network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import jsonschema
import pystac
from pystac.validation.local_validator import get_local_schema_cache
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

from moczarr.errors import NotFoundError
from moczarr.metadata import is_remote

#: override of the offline schema folder (tests monkeypatch it); None = environment / default
SCHEMA_DIR: str | os.PathLike | None = None


class MissingSchemaError(NotFoundError):
    """A JSON schema needed to validate a STAC document is not available offline."""


#: the extension schemas shipped with the package (see NOTICE.md there)
BUNDLED_SCHEMAS = Path(__file__).resolve().parent / "schemas"


def schema_dir() -> Path:
    """Where the offline extension schemas are: :data:`SCHEMA_DIR`, ``MOCZARR_STAC_SCHEMAS``, or the bundled copies."""
    if SCHEMA_DIR is not None:
        return Path(SCHEMA_DIR)
    if os.environ.get("MOCZARR_STAC_SCHEMAS"):
        return Path(os.environ["MOCZARR_STAC_SCHEMAS"])
    return BUNDLED_SCHEMAS


def _strip_fragment(uri: str) -> str:
    return uri.split("#", 1)[0]


def _schemas(folder: Path) -> dict[str, dict]:
    """Every schema available offline: pystac's bundled core plus the folder's index (URI -> schema)."""
    out: dict[str, dict] = {}
    out.update({_strip_fragment(k): v for k, v in get_local_schema_cache().items()})
    index_path = folder / "index.json"
    if index_path.is_file():
        index = json.loads(index_path.read_text())
        for uri, name in index.items():
            file = folder / name
            if file.is_file():
                out[_strip_fragment(uri)] = json.loads(file.read_text())
    return out


def _registry(schemas: dict[str, dict]):
    def retrieve(uri: str):
        raise MissingSchemaError(f"schema {uri} is not available offline (looked in pystac and {schema_dir()})")

    resources = [(uri, Resource.from_contents(doc, default_specification=DRAFT7)) for uri, doc in schemas.items()]
    # retrieve= is the alias attrs gives Registry's private _retrieve field; mypy's attrs plugin does not apply it
    return Registry(retrieve=retrieve).with_resources(resources)  # type: ignore[call-arg]


def _core_uri(doc: dict) -> str:
    type_name = doc.get("type")
    kinds = {"Feature": "item", "Collection": "collection", "Catalog": "catalog"}
    kind = kinds.get(type_name) if isinstance(type_name, str) else None
    if kind is None:
        raise pystac.errors.STACValidationError(f"{doc.get('id')!r}: type {doc.get('type')!r} is no STAC object type")
    return f"https://schemas.stacspec.org/v{doc.get('stac_version')}/{kind}-spec/json-schema/{kind}.json"


def validate_document(doc: dict, *, where: str | None = None, schemas: dict | None = None, registry=None) -> list[str]:
    """Validate one STAC document (a dict) against core and each declared extension; returns the schema URIs.

    Raises :class:`MissingSchemaError` when a schema is not available offline
    and :class:`pystac.errors.STACValidationError` when the document is invalid.
    """
    folder = schema_dir()
    if schemas is None:
        schemas = _schemas(folder)
        registry = _registry(schemas)
    where = where or str(doc.get("id"))
    uris = [_core_uri(doc)] + [_strip_fragment(u) for u in doc.get("stac_extensions") or []]
    missing = [u for u in uris if u not in schemas]
    if missing:
        raise MissingSchemaError(
            f"{where}: no offline schema for {', '.join(missing)} (STAC core from pystac's bundled schemas; "
            f"extensions from {folder}/index.json)"
        )
    for uri in uris:
        schema = schemas[uri]
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        validator = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)
        try:
            errors = list(validator.iter_errors(doc))
        except Unresolvable as exc:
            raise MissingSchemaError(f"{where}: {uri} refers to a schema not available offline ({exc})") from None
        except MissingSchemaError as exc:
            raise MissingSchemaError(f"{where}: {uri}: {exc}") from None
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            raise pystac.errors.STACValidationError(
                f"{where} (id {doc.get('id')!r}) fails {uri}: {best.message} at {list(best.absolute_path)}",
                source=errors,
            )
    return uris


def _walk_file(path: Path, seen: set[Path]) -> Iterable[tuple[str, dict]]:
    path = path.resolve()
    if path in seen:
        return
    seen.add(path)
    doc = json.loads(path.read_text())
    yield str(path), doc
    for link in doc.get("links") or []:
        if link.get("rel") in ("child", "item") and isinstance(link.get("href"), str):
            href = link["href"]
            if is_remote(href) and not href.startswith("file://"):
                raise MissingSchemaError(f"{path}: link {href} is not a local document; validate it where it lives")
            target = Path(href[len("file://") :] if href.startswith("file://") else href)
            yield from _walk_file(target if target.is_absolute() else path.parent / target, seen)


def _object_docs(obj: pystac.STACObject) -> Iterable[tuple[str, dict]]:
    def as_doc(o: pystac.STACObject) -> dict:
        doc = o.to_dict(include_self_link=False, transform_hrefs=o.get_self_href() is not None)
        for link in doc.get("links", []):
            if link.get("href") is None:  # not written yet: the link stands, its href is a placeholder
                link["href"] = f"./unsaved-{link.get('rel')}.json"
        return doc

    yield (obj.get_self_href() or obj.id), as_doc(obj)
    if isinstance(obj, pystac.Catalog):
        for child in obj.get_children():
            yield from _object_docs(child)
        for item in obj.get_items():
            yield (item.get_self_href() or item.id), as_doc(item)


def validate_offline(obj) -> dict[str, list[str]]:
    """Validate STAC documents offline: core plus every declared extension's schema.

    ``obj``: a document dict, a pystac Item/Collection/Catalog (with all its
    descendants; links of objects not yet written get placeholder hrefs), or the path
    of a written JSON document (its ``child``/``item`` links are followed on
    disk, so a saved catalog is validated exactly as written). Returns
    ``{document: [schema URIs checked]}``. Raises :class:`MissingSchemaError`
    when any needed schema is absent (never skips) and
    :class:`pystac.errors.STACValidationError` on the first invalid document.
    """
    schemas = _schemas(schema_dir())
    registry = _registry(schemas)
    if isinstance(obj, dict):
        docs: Iterable[tuple[str, dict]] = [(str(obj.get("id")), obj)]
    elif isinstance(obj, pystac.STACObject):
        docs = _object_docs(obj)
    else:
        docs = _walk_file(Path(os.fspath(obj)), set())
    out = {}
    for where, doc in docs:
        doc = json.loads(json.dumps(doc))  # tuples -> lists, as written
        out[where] = validate_document(doc, where=where, schemas=schemas, registry=registry)
    return out
