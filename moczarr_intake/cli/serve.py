"""``moczarr-catalog serve``: the map-tile server of :mod:`moczarr.tiles.app` under uvicorn, until interrupted."""

from __future__ import annotations

import os
import socket
import sys

from moczarr.errors import MissingExtraError

from .common import add_storage_flags, command_parser, storage_options


def add_parser(sub):
    p = command_parser(
        sub,
        "serve",
        "serve map tiles of the stores under --allow (titiler's routes)",
        "Serve map tiles of morton-hive stores over HTTP with titiler's routes: /tiles/{tms}/{z}/{x}/{y}[.png|.npy],\n"
        "/{tms}/tilejson.json, /WMTSCapabilities.xml, /point/{lon},{lat}, /info, /statistics; each takes the\n"
        "store as url= and the reader's variable=, window=, time=START/END, cell_order=, product=, and titiler's\n"
        "rescale= and colormap_name=. Only stores under an --allow prefix are opened (others: 403); without\n"
        "--allow, the stores under the current folder. Levels stay open across requests. Listens on\n"
        "127.0.0.1 unless --host says otherwise; --port 0 takes a free port. The first line on stderr names\n"
        "the server's URL; Ctrl-C stops it. Needs the tiles extra: pip install 'moczarr[tiles]'.",
        [
            "--allow catalogs",
            "--allow s3://bucket/stores --anon --endpoint-url https://s3.example.org --port 8080",
        ],
    )
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine)")
    p.add_argument("--port", type=int, default=8000, help="the port to listen on (default: 8000; 0: a free one)")
    p.add_argument(
        "--allow",
        action="append",
        default=None,
        metavar="PREFIX",
        help="a folder or URL prefix whose stores may be served (repeatable; default: the current folder)",
    )
    add_storage_flags(p)
    return p


def run(args) -> int:
    try:
        import uvicorn

        from moczarr.tiles.app import create_app
    except ImportError as exc:
        raise MissingExtraError(
            f"serve needs the tiles extra ({exc.name or exc} is not installed): pip install 'moczarr[tiles]'"
        ) from None
    allow = args.allow or [os.getcwd()]
    app = create_app(allow=allow, storage_options=storage_options(args))
    sock = listening_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving http://{shown}:{port} (stores under {', '.join(allow)}); Ctrl-C stops", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5))
    server.run(sockets=[sock])
    return 0


def listening_socket(host: str, port: int, backlog: int | None = None) -> socket.socket:
    """A TCP socket listening on ``host:port`` (0: a free port), made with ``proto=IPPROTO_TCP``.

    asyncio sets ``TCP_NODELAY`` on the connections of a server socket only when
    its ``proto`` says TCP, and ``socket.create_server`` leaves it 0: uvicorn's
    body write then waits for the delayed ACK of its header write, 40 ms a
    request on a kept-alive connection (every browser's).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        if os.name == "posix":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN if backlog is None else backlog)
    except OSError:
        sock.close()
        raise
    return sock
