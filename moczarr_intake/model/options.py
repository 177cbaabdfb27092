"""The catalog build's options (:class:`BuildOptions`, spelled once), checked before anything is read or written.

The command line's ``build`` flags are made from :class:`BuildOptions`, the
build record keeps its recorded fields and ``update`` reads them back
(:meth:`BuildOptions.from_record`). Each check raises
:class:`moczarr.errors.ArgumentError` naming the flag and what is wrong, so
a build refuses an option it cannot honour instead of writing a catalog that
says something else. Nothing heavy is imported here: the command line checks
its flags before it loads the reader.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from moczarr.errors import ArgumentError

#: URL schemes a published store or catalog may be addressed by
URL_SCHEMES = ("http", "https", "s3", "gs", "az")
#: what STAC 1.1 accepts in a Collection's ``license`` (its licensing.json pattern): one identifier
STAC_LICENSE = re.compile(r"^[\w\-.+]+$")
MANIFEST_NAME = "morton_hive.json"  # the file that makes a folder a store (moczarr.metadata.MANIFEST_NAME)


def is_url(text: str) -> bool:
    """Whether ``text`` has a ``scheme://`` prefix (a URL, not a path)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text) is not None


def redacted(url: str) -> str:
    """``url`` with everything between ``://`` and its last ``@`` shown as ``***`` (what a message may echo).

    Up to the last ``@``, not the first ``/``: a secret may hold a ``/``, which ends a URL's address early.
    """
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://).*@", r"\1***@", url, flags=re.DOTALL)


def check_url(value: str | None, flag: str, schemes: tuple[str, ...] = URL_SCHEMES) -> str | None:
    """``value`` without its trailing ``/`` when it is an absolute URL with a host and a scheme of ``schemes``
    (default: http(s), s3, gs or az).

    Raises :class:`ArgumentError` naming ``flag`` otherwise (``ftp:/x``, ``not-a-url``, ``https://``), and
    for a URL holding a ``user:password@``: a credential would be written where the URL is, so it is
    refused, and no message echoes it (:func:`redacted`).
    """
    from urllib.parse import urlsplit

    if value is None:
        return None
    parts = urlsplit(value)
    shown = redacted(value)
    if parts.scheme.lower() not in schemes or not parts.netloc or not is_url(value):
        raise ArgumentError(
            f"{flag} {shown!r} is not an absolute URL: give scheme://host/path with a scheme of {', '.join(schemes)}"
        )
    if "@" in value.split("://", 1)[1]:  # userinfo, or a secret holding a "/" that cut the address short
        raise ArgumentError(
            f"{flag} {shown!r} holds a user name or password: give the URL without it and pass credentials "
            "through the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a profile (AWS_PROFILE)"
        )
    if parts.query or parts.fragment:
        raise ArgumentError(f"{flag} {shown!r}: a base URL takes no query or fragment")
    return value.rstrip("/")


#: the characters an SPDX license expression is spelled with (identifiers, ``+``, ``:``, parentheses, spaces)
SPDX_CHARACTERS = re.compile(r"^[A-Za-z0-9.+:() -]+$")


def check_license(value: str | None) -> tuple[str | None, str | None]:
    """``(SPDX id, None)``, ``(None, URL)`` or ``(None, None)`` for the ``--license`` flag.

    An SPDX license identifier is checked against the SPDX license list that
    ``packaging`` ships (``packaging.licenses``) and returned in its canonical
    case; it must be one identifier (``MIT OR Apache-2.0`` is an expression,
    which a STAC ``license`` field cannot hold: give a URL to such terms).
    A URL must be http(s). Raises :class:`ArgumentError` otherwise.
    """
    from urllib.parse import urlsplit

    if value is None:
        return None, None
    if is_url(value):
        if urlsplit(value).scheme.lower() not in ("http", "https") or not urlsplit(value).netloc:
            raise ArgumentError(f"--license {value!r}: a license URL must be an http(s) URL with a host")
        return None, value
    not_a_licence = ArgumentError(
        f"--license {value!r} is neither an SPDX license identifier (https://spdx.org/licenses/) nor an http(s) URL"
    )
    if not SPDX_CHARACTERS.match(value):  # refused without loading the SPDX list (the command stays light)
        raise not_a_licence
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        canonical = canonicalize_license_expression(value)
    except InvalidLicenseExpression:
        raise not_a_licence from None
    if not STAC_LICENSE.match(canonical):
        raise ArgumentError(
            f"--license {value!r} is an SPDX expression: a STAC license holds one identifier; "
            "give the URL of the terms instead"
        )
    return canonical, None


def check_out(out: str | os.PathLike, roots: list[str]) -> Path:
    """``out`` resolved, when it may receive the catalog: not a file, not inside any store.

    Refused (:class:`ArgumentError`): an existing file; a folder inside (or
    equal to) a local root given to the build; a folder inside any folder that
    holds a ``morton_hive.json`` (a store or a product). The catalog would
    otherwise be written into a store, which the reader then sees as a foreign
    child.
    """
    path = Path(out).resolve()
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"--out {os.fspath(out)!r} is a file: give a folder for the catalog")
    for root in roots:
        if is_url(root):
            continue
        store = Path(root).resolve()
        if path == store or path.is_relative_to(store):
            raise ArgumentError(
                f"--out {os.fspath(out)!r} is inside the store root {root!r}: the catalog would be written into "
                "the store; give a folder outside it (a store may sit inside --out, not the other way round)"
            )
    for folder in (path, *path.parents):
        if (folder / MANIFEST_NAME).is_file():
            raise ArgumentError(
                f"--out {os.fspath(out)!r} is inside the store {os.fspath(folder)!r} (it holds {MANIFEST_NAME}): "
                "give a folder outside it"
            )
    return path


def check_stores_root(stores_root: str | None, href_base: str | None) -> str | None:
    """``stores_root`` when it can mean something: it names the folder ``--href-base`` stands for."""
    if stores_root is None:
        return None
    if href_base is None:
        raise ArgumentError("--stores-root names the folder --href-base stands for: give --href-base too")
    if is_url(stores_root) or not Path(stores_root).is_dir():
        raise ArgumentError(f"--stores-root {stores_root!r} is not a local folder")
    return stores_root


#: the help of ``--scheduler`` (``build`` and ``update``)
SCHEDULER_HELP = "a dask.distributed scheduler address: the per-store reads run on that cluster"


def _option(default, help: str | None, *, metavar: str | None = None, recorded: bool = True):
    """A :class:`BuildOptions` field: its flag's help (None: no flag of its own) and whether the record keeps it."""
    return field(default=default, metadata={"help": help, "metavar": metavar, "recorded": recorded})


@dataclass(frozen=True)
class BuildOptions:
    """How a catalog is built: the one spelling of the build's options.

    The ``build`` command's flags are made from these fields (``--href-base``
    for ``href_base``; :meth:`flags`); the build record keeps the recorded
    ones (:meth:`recorded`) and an update builds with them again
    (:meth:`from_record`). ``storage_options`` (how to read the stores and
    write an object-store output) has no flag of its own: the command line
    makes it from ``--anon`` and ``--endpoint-url``; of it a catalog and its
    record keep only where and how to reach the data, never a credential.
    """

    #: the roots are prefixes: every store below them is catalogued (the record keeps it beside the roots)
    discover: bool = _option(False, "the roots are prefixes: catalog every store below them", recorded=False)
    thumbnails: bool = _option(False, "attach quicklook PNGs of each level's data")
    #: where the stores will be published: hrefs become ``href_base/<path relative to stores_root>``
    href_base: str | None = _option(
        None,
        "where the stores will be published: hrefs become URL/<path relative to --stores-root>",
        metavar="URL",
    )
    stores_root: str | None = _option(
        None, "the folder --href-base stands for (default: the common parent of the roots)", metavar="DIR"
    )
    #: the URL the catalog will be published at (absolute self links)
    catalog_url: str | None = _option(
        None,
        "the URL --out will be published at (absolute self links on every Catalog and Collection)",
        metavar="URL",
    )
    license: str | None = _option(None, "license (an SPDX id or a URL) of products whose manifest records none")
    #: the base URL of a moczarr tile server: each Item and Collection gets web-map links and a render to it
    tiles_url: str | None = _option(
        None,
        "the base URL of a moczarr tile server (titiler's routes): web-map links (xyz, tilejson, wmts) and a render "
        "on every Item and Collection, so a map shows the data (needs published store hrefs: --href-base)",
        metavar="URL",
    )
    #: fail (nothing written) when any product had to be degraded: :class:`~moczarr_intake.errors.DegradedBuildError`
    strict: bool = _option(False, "fail (exit 1, nothing written) when any product had to be degraded")
    #: a dask.distributed scheduler address: the per-store reads run on that cluster
    scheduler: str | None = _option(None, SCHEDULER_HELP, metavar="ADDRESS", recorded=False)
    storage_options: dict | None = field(default=None, metadata={"help": None, "metavar": None, "recorded": False})

    def checked(self) -> BuildOptions:
        """These options with the URLs normalised (no trailing ``/``), once each is known to be good.

        Raises :class:`ArgumentError` naming the flag: ``href_base`` and
        ``catalog_url`` must be absolute http(s), s3, gs or az URLs,
        ``tiles_url`` an absolute http(s) URL (a browser requests its tiles),
        ``stores_root`` a local folder given with ``href_base``, ``license``
        an SPDX license identifier or an http(s) URL.
        """
        href_base = check_url(self.href_base, "--href-base")
        catalog_url = check_url(self.catalog_url, "--catalog-url")
        tiles_url = check_url(self.tiles_url, "--tiles-url", ("http", "https"))
        stores_root = check_stores_root(self.stores_root, href_base)
        check_license(self.license)
        return dataclasses.replace(
            self, href_base=href_base, catalog_url=catalog_url, tiles_url=tiles_url, stores_root=stores_root
        )

    def recorded(self) -> dict:
        """The options a build record keeps, by name, in field order (without the storage options)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata["recorded"]}

    @classmethod
    def from_record(cls, options: dict, discover: bool, **given) -> BuildOptions:
        """The options a build record keeps (``options``, ``discover``), with ``given`` fields laid over them
        (e.g. the storage options and the scheduler of the run that updates)."""
        kept = {
            f.name: options[f.name] for f in dataclasses.fields(cls) if f.metadata["recorded"] and f.name in options
        }
        return cls(**{"discover": discover, **kept, "storage_options": options.get("storage_options"), **given})

    @classmethod
    def flags(cls) -> list[tuple[str, dict]]:
        """``(flag, argparse keywords)`` per option that has a flag, in field order (``--href-base`` ...)."""
        out = []
        for f in dataclasses.fields(cls):
            if f.metadata["help"] is None:
                continue
            kw: dict = {"help": f.metadata["help"]}
            if f.default is False:
                kw["action"] = "store_true"
            else:
                kw["default"] = None
                if f.metadata["metavar"]:
                    kw["metavar"] = f.metadata["metavar"]
            out.append(("--" + f.name.replace("_", "-"), kw))
        return out

    @classmethod
    def from_args(cls, args, storage_options: dict | None) -> BuildOptions:
        """The options of parsed ``build`` flags (:meth:`flags`) and the storage options made from theirs."""
        names = [f.name for f in dataclasses.fields(cls) if f.metadata["help"] is not None]
        return cls(**{name: getattr(args, name) for name in names}, storage_options=storage_options)
