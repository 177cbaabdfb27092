"""The tile server: titiler's own :class:`~titiler.core.factory.TilerFactory` over :class:`HiveReader`.

The routes are titiler's, so any titiler client knows them (under the prefix the router is mounted at):
``/tiles/{tileMatrixSetId}/{z}/{x}/{y}[.{format}]`` (``.npy`` gives the raw values and their mask),
``/{tileMatrixSetId}/tilejson.json``, ``/WMTSCapabilities.xml`` (titiler's WMTS extension: a layer per grid,
named ``{url}_{tileMatrixSetId}_default`` with ``url=`` as the request gave it;
``/{tileMatrixSetId}/WMTSCapabilities.xml`` redirects there), ``/point/{lon},{lat}``,
``/info``, ``/statistics``, ``/preview``, ``/bbox``, ``/feature`` and ``/{tileMatrixSetId}/map.html``, with
titiler's ``rescale=``, ``colormap_name=``, ``colormap=`` and the rest.
Every route takes the store as ``url=`` and the reader's parameters ``product=`` (a product of a
multi-product root), ``variable=``, ``window=``, ``time=`` (``START/END``) and ``cell_order=``.

A server opens only the stores it was told to: ``url=`` must lie under one of the ``allow`` prefixes (a
folder, or an object-store or HTTP URL prefix, matched whole path segments at a time; a folder's links are
resolved, a URL's ``.`` or ``..`` segments refused), else the answer is 403; the reader keeps every key it
reads from a store inside that store. The storage options (credentials, endpoint) are the server's, never a request's.

Running it::

    moczarr-catalog serve --allow s3://bucket/stores --port 8000

or, in Python, ``uvicorn.run(create_app(allow=["s3://bucket/stores"]))``.

Mounting the routes into an existing FastAPI or titiler application::

    from moczarr.tiles.app import add_error_handlers, tiler_factory

    factory = tiler_factory(allow=["s3://bucket/stores"], router_prefix="/moczarr")
    app.include_router(factory.router, prefix="/moczarr", tags=["HEALPix stores"])
    add_error_handlers(app)  # the reader's errors as 400/404/500/502, one line each

``router_prefix`` must equal the ``prefix`` the router is mounted at: titiler builds the tile URLs of
tilejson and WMTS documents from it. A server's levels stay open across requests (the reader's level
cache); each request runs in the server's thread pool, so tiles are answered concurrently.
"""

from __future__ import annotations

import inspect
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import unquote

import attr
import numpy as np
from fastapi import FastAPI, HTTPException, Query
from numpy.lib import format as npy_format
from rio_tiler.models import ImageData
from starlette import status
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from titiler.core.dependencies import DefaultDependency
from titiler.core.errors import DEFAULT_STATUS_CODES, add_exception_handlers
from titiler.core.factory import ColorMapFactory, TilerFactory, TMSFactory
from titiler.core.resources.enums import ImageType
from titiler.core.utils import render_image
from titiler.extensions.wmts import wmtsExtension

from ..errors import (
    ArgumentError,
    ContentError,
    MissingExtraError,
    MoczarrError,
    NotFoundError,
    StorageError,
    StoreNotFoundError,
)
from ..storage import is_remote, normalize_location
from .levels import TILE_MATRIX_SETS
from .reader import HiveReader

#: the HTTP status of each of the reader's error families (a subclass takes its nearest listed ancestor): a
#: request's bad argument 400, what is not there 404, an object store that failed 502, a damaged store 500
STATUS_CODES: dict[type[Exception], int] = {
    MoczarrError: status.HTTP_500_INTERNAL_SERVER_ERROR,
    ArgumentError: status.HTTP_400_BAD_REQUEST,
    MissingExtraError: status.HTTP_500_INTERNAL_SERVER_ERROR,  # the server's install, not the request
    NotFoundError: status.HTTP_404_NOT_FOUND,
    StoreNotFoundError: status.HTTP_404_NOT_FOUND,  # a StorageError too, but a store that is not there
    StorageError: status.HTTP_502_BAD_GATEWAY,
    ContentError: status.HTTP_500_INTERNAL_SERVER_ERROR,
}


class StoreAccess:
    """The stores a server may open: the locations under one of ``allow`` (folders, or URL prefixes).

    Each prefix is normalised as the reader spells a location (a folder made absolute and its links resolved,
    a URL without trailing slashes); a location matches a prefix when it equals it or continues it past a
    ``/``. Raises :class:`~moczarr.errors.ArgumentError` for an empty ``allow`` or a prefix that is not one.
    """

    def __init__(self, allow: Sequence[str]):
        if isinstance(allow, str) or not allow:
            raise ArgumentError(f"allow= must name at least one folder or URL prefix (a list), not {allow!r}")
        self.prefixes = tuple(dict.fromkeys(self._location(str(p), "allow prefix") for p in allow))

    def check(self, url: str) -> str:
        """The normalised location of ``url`` when it lies under an allowed prefix.

        Raises :class:`PermissionError` naming ``url`` otherwise (the server answers 403), and
        :class:`~moczarr.errors.ArgumentError` for a URL that is no plain location (a query, a fragment, a
        chained protocol, a ``.`` or ``..`` segment).
        """
        location = self._location(url, "url=")
        if not any(location == p or location.startswith(p.rstrip("/") + "/") for p in self.prefixes):
            raise PermissionError(f"url={url!r} is outside the stores this server serves (its --allow prefixes)")
        return location

    @staticmethod
    def _location(text: str, what: str) -> str:
        if not text.strip():
            raise ArgumentError(f"{what} is empty: give a store's folder or URL")
        if not is_remote(text):
            return os.path.realpath(normalize_location(text))
        head, _, rest = text.partition("://")
        if any(c in rest for c in "?#\\") or "::" in head:
            raise ArgumentError(f"{what} {text!r} has a query, a fragment or a chained protocol: give a plain URL")
        if {".", ".."} & set(unquote(rest).split("/")):
            raise ArgumentError(f"{what} {text!r} holds a '.' or '..' segment: give the store's own URL")
        return normalize_location(text)


class StoreLocation(str):
    """A store location checked by :class:`StoreAccess` (what the reader opens); :attr:`given` is the ``url=`` as
    the request spelled it, which names the store's layers in the WMTS document (``{url}_{grid}_default``)."""

    given: str


def path_dependency(access: StoreAccess) -> Callable[..., str]:
    """titiler's path dependency: the :class:`StoreLocation` of a request's ``url=``, or HTTP 403
    (:class:`StoreAccess`)."""

    def store_location(
        url: Annotated[str, Query(description="The store (or product) URL: a folder or an object-store URL")],
    ) -> str:
        try:
            location = StoreLocation(access.check(url))
        except PermissionError as exc:
            raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
        location.given = url
        return location

    return store_location


def _layer_name(src_path: Any) -> str:
    return getattr(src_path, "given", str(src_path))


def reader_dependency(storage_options: dict | None = None) -> type[DefaultDependency]:
    """titiler's reader dependency: :class:`HiveReader`'s query parameters, and the server's ``storage_options``.

    ``time=START/END`` is given to the reader as the pair ``(START, END)``.
    """
    options = dict(storage_options) if storage_options else None

    @dataclass
    class HiveReaderParams(DefaultDependency):
        variable: Annotated[str | None, Query(description="The variable drawn (default: the reader's)")] = None
        product: Annotated[str | None, Query(description="A product of a multi-product store root")] = None
        window: Annotated[str | None, Query(description="The time window of a windowed store")] = None
        time: Annotated[str | None, Query(description="A time range, START/END (ISO 8601, half-open)")] = None
        cell_order: Annotated[
            int | None, Query(ge=0, le=29, description="The level drawn (default: the one the zoom calls for)")
        ] = None

        def as_dict(self, exclude_none: bool = True) -> dict:
            params = super().as_dict(exclude_none)
            if self.time is not None:
                start, sep, end = self.time.partition("/")
                if not sep:
                    raise HTTPException(status.HTTP_400_BAD_REQUEST, f"time={self.time!r} is not START/END")
                params["time"] = (start, end)
            if options is not None:
                params["storage_options"] = options
            return params

    return HiveReaderParams


def tiler_factory(
    *, allow: Sequence[str], storage_options: dict | None = None, router_prefix: str = "", **factory_options: Any
) -> TilerFactory:
    """titiler's :class:`~titiler.core.factory.TilerFactory` over :class:`HiveReader`, with the WMTS extension.

    ``allow`` lists the folders and URL prefixes whose stores requests may open (:class:`StoreAccess`);
    ``storage_options`` are given to every open (the server's credentials and endpoint); ``router_prefix``
    is the prefix the router is mounted at. ``factory_options`` go to the factory (``supported_tms=``, by
    default morecantile's grids as :data:`~moczarr.tiles.levels.TILE_MATRIX_SETS` shares them,
    ``render_func=``, by default :func:`render_tile`, ``add_viewer=``, ``reader=``, a subclass of
    :class:`HiveReader`, ...). The routes' parameter
    dependencies (the store's, the reader's and titiler's defaults) are called in the event loop
    (:func:`in_event_loop`), one given in ``factory_options`` as given. Mount ``factory.router`` into an
    application as the module's docstring shows. Raises :class:`~moczarr.errors.ArgumentError` for an empty ``allow``
    or a ``reader`` that is no :class:`HiveReader`.
    """
    reader = factory_options.pop("reader", HiveReader)
    if not (isinstance(reader, type) and issubclass(reader, HiveReader)):
        raise ArgumentError(f"tiler_factory: reader= must be HiveReader or a subclass of it, got {reader!r}")
    factory_options.setdefault("supported_tms", TILE_MATRIX_SETS)  # one shared grid per id, not a copy a request
    factory_options.setdefault("render_func", render_tile)
    params = reader_dependency(storage_options)
    plain = {name: factory_options.pop(name, default) for name, default in PARSING_DEPENDENCIES.items()}
    served = {name: dep if dep is not PARSING_DEPENDENCIES[name] else in_event_loop(dep) for name, dep in plain.items()}
    # the WMTS extension calls a layer's tile dependencies itself, as plain functions: it is given those
    wmts = wmtsExtension(
        layer_identifier_provider=_layer_name,
        tile_dependencies=[params, *(plain[f"{name}_dependency"] for name in WMTS_TILE_DEPENDENCIES)],
    )
    factory = TilerFactory(
        reader=reader,
        path_dependency=in_event_loop(path_dependency(StoreAccess(allow))),
        reader_dependency=in_event_loop(params),
        router_prefix=router_prefix,
        extensions=[wmts],
        **served,
        **factory_options,
    )
    _add_wmts_per_grid(factory)
    return factory


#: the factory's dependencies titiler's WMTS extension checks a layer's query against, in its order, after the reader's
WMTS_TILE_DEPENDENCIES = ("tile", "layer", "dataset", "process", "colormap", "render")
#: titiler's default dependencies of the tile routes, by factory field: each only parses a request's parameters
PARSING_DEPENDENCIES: dict[str, Any] = {
    name: attr.fields_dict(TilerFactory)[name].default
    for name in (
        "layer_dependency",
        "dataset_dependency",
        "tile_dependency",
        "process_dependency",
        "colormap_dependency",
        "render_dependency",
        "environment_dependency",
    )
}


def in_event_loop(dependency: Callable[..., Any]) -> Any:
    """``dependency`` (a function or a dataclass of query parameters) as a coroutine function of the same
    parameters, so FastAPI calls it in the event loop: it runs a plain one in its thread pool, a hop between
    threads that costs more than parsing a few parameters (a tile route has nine such dependencies)."""

    if inspect.iscoroutinefunction(dependency):
        return dependency

    async def call(**params: Any) -> Any:
        return dependency(**params)

    call.__signature__ = inspect.signature(dependency, eval_str=True)  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = getattr(dependency, "__name__", "dependency")
    call.__doc__ = dependency.__doc__
    return call


def render_tile(
    image: ImageData,
    colormap: Any = None,
    output_format: ImageType | None = None,
    add_mask: bool = True,
    rescale: Any = None,
    color_formula: str | None = None,
    **kwargs: Any,
) -> tuple[bytes, str]:
    """titiler's :func:`~titiler.core.utils.render_image` (the factory's ``render_func``), byte for byte.

    A plain ``.npy`` (no colormap, rescale or colour formula) is written
    straight from the values and the mask band: titiler copies both, joins
    them and saves the join through ``numpy.save``, several copies of a tile
    whose values are 8 bytes a pixel, the costliest step of a warm tile.
    """
    data, mask = image.data, image.mask if add_mask else None
    if (
        output_format != ImageType.npy
        or colormap
        or rescale
        or color_formula
        or kwargs
        or (mask is not None and mask.dtype != data.dtype)
    ):
        return render_image(
            image,
            colormap=colormap,
            output_format=output_format,
            add_mask=add_mask,
            rescale=rescale,
            color_formula=color_formula,
            **kwargs,
        )
    bands = [np.ascontiguousarray(data)] + ([] if mask is None else [np.ascontiguousarray(mask[None])])
    header = io.BytesIO()
    npy_format.write_array_header_1_0(  # what numpy.save writes for a header this short
        header,
        {
            "shape": (sum(b.shape[0] for b in bands), *data.shape[1:]),
            "fortran_order": False,
            "descr": npy_format.dtype_to_descr(data.dtype),
        },
    )
    return b"".join([header.getvalue(), *bands]), ImageType.npy.mediatype


def _add_wmts_per_grid(factory: TilerFactory) -> None:
    """``/{tileMatrixSetId}/WMTSCapabilities.xml``, the route older titiler releases served and clients still
    ask: a redirect to titiler 2's ``/WMTSCapabilities.xml`` (every grid a layer), the query kept."""

    @factory.router.get("/{tileMatrixSetId}/WMTSCapabilities.xml", include_in_schema=False)
    def wmts_of_grid(request: Request, tileMatrixSetId: str) -> Response:
        if tileMatrixSetId not in factory.supported_tms.list():
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no tile matrix set {tileMatrixSetId!r}")
        target = factory.url_for(request, "wmts")
        query = request.url.query
        return RedirectResponse(f"{target}?{query}" if query else target, status.HTTP_307_TEMPORARY_REDIRECT)


def add_error_handlers(app: FastAPI) -> None:
    """The reader's errors answered by ``app`` as JSON ``{"detail": message}``, the message on one line, with
    the status :data:`STATUS_CODES` gives the error's nearest listed class."""
    for cls, code in STATUS_CODES.items():
        app.add_exception_handler(cls, _handler(code))


def _handler(code: int) -> Callable[[Request, Exception], Response]:
    def handler(request: Request, exc: Exception) -> Response:
        return JSONResponse({"detail": " ".join(str(exc).split()) or type(exc).__name__}, status_code=code)

    return handler


def create_app(*, allow: Sequence[str], storage_options: dict | None = None, **factory_options: Any) -> FastAPI:
    """A FastAPI application serving the tiles of the stores under ``allow`` (:func:`tiler_factory`, which
    ``factory_options`` go to).

    Beside the tile routes: titiler's ``/tileMatrixSets`` and ``/colorMaps``; errors as JSON ``{"detail":
    one line}`` with the status of :data:`STATUS_CODES` (titiler's own for the rest); CORS open to every
    origin for ``GET``, so a web map served elsewhere (STAC Browser) can draw the tiles.
    """
    app = FastAPI(title="moczarr tiles", description="Map tiles of morton-hive (HEALPix) zarr stores")
    factory = tiler_factory(allow=allow, storage_options=storage_options, **factory_options)
    app.include_router(factory.router, tags=["Tiles"])
    app.include_router(TMSFactory().router, tags=["Tiling schemes"])
    app.include_router(ColorMapFactory().router, tags=["Color maps"])
    add_exception_handlers(app, DEFAULT_STATUS_CODES)
    add_error_handlers(app)
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET"], allow_headers=["*"])
    return app


__all__ = [
    "STATUS_CODES",
    "StoreAccess",
    "StoreLocation",
    "add_error_handlers",
    "create_app",
    "in_event_loop",
    "path_dependency",
    "reader_dependency",
    "render_tile",
    "tiler_factory",
]
