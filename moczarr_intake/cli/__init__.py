"""``moczarr-catalog``: build STAC and Intake catalogs for morton-hive stores, keep them current, publish them.

One module per command (:data:`COMMANDS`), each adding its parser and calling
the library (:func:`moczarr_intake.build`, ``update``, ``publish``; ``serve`` runs
:mod:`moczarr.tiles.app`).
:func:`main` is the command: every failure one ``error:`` line on stderr, never
a traceback (:data:`DESCRIPTION` is what ``--help`` prints; the exit statuses
are listed there).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys

from moczarr.errors import MoczarrError

from . import build, demo, publish, serve, show, update, verify
from .common import one_line

#: the commands, in the order ``--help`` lists them: each module's ``add_parser`` and ``run``
COMMANDS = [build, show, demo, verify, update, publish, serve]

DESCRIPTION = """\
Build STAC and Intake catalogs for morton-hive stores and moraine pyramids,
keep them current as the stores change, and publish them to a STAC API.

A catalog folder (--out) holds stac/catalog.json (static STAC), catalog.yaml
and catalog_v2.yaml (Intake), and, when every store has a URL (--href-base),
what a STAC API server loads (stac/api-items/*.parquet, stac/api-collections/).
It is changed only when a run succeeds.

Run "moczarr-catalog COMMAND --help" for a command's arguments and examples.

exit status: 0 success; 1 a --strict build met a degraded product, or verify
found an error; 2 any other failure, one "error: ..." line on stderr (bad
arguments, a damaged store, an object store that failed); 130 interrupted;
141 stdout was closed early (show ... | head), as for any command a pipe ends.
"""

EPILOG = """\
examples:
  moczarr-catalog demo
  moczarr-catalog show catalogs/sample
  moczarr-catalog build catalogs/sample --out out --href-base https://data.example.org/stores
  moczarr-catalog update out
"""

#: the exit status of a run whose stdout was closed by its reader (128 + SIGPIPE, as the shell reports a command
#: a pipe ended)
CLOSED_STDOUT = 141
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """The ``moczarr-catalog`` entry point: every failure is one ``error:`` line on stderr, never a traceback.

    Exit status (:data:`DESCRIPTION`): 0 success; 1 when a ``--strict`` build
    met a degraded product (or ``verify`` found an error); 2 for any other
    failure (a :class:`~moczarr.errors.MoczarrError`, an operating-system error
    named by its file, anything else named by its type) and argparse's usage
    errors; 130 when interrupted; 141 when stdout was closed before the output
    was written (``show ... | head``: the rest of the output is dropped quietly).

    Run as the command (``argv`` None), an interrupted run leaves at once after
    its one line: every ``finally`` between the interrupt and here has run (a
    lock released, a staging folder removed), and the reader's background
    threads, whose work is abandoned, are not waited for (waiting let them meet
    shut-down pools: ``cannot schedule new futures after shutdown``).
    """
    from ..errors import DegradedBuildError

    try:
        status = run(argv)
        sys.stdout.flush()  # a reader that closed the pipe is met here, not at the interpreter's exit
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except DegradedBuildError as exc:
        _error(one_line(exc))
        return 1
    except MoczarrError as exc:
        _error(one_line(exc))
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        if argv is None:
            _flush_quietly()
            os._exit(INTERRUPTED)
        return INTERRUPTED
    except OSError as exc:  # a path the command could not use: named, with the system's reason
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        _error(f"{where}: {exc.strerror or one_line(exc)}" if where else one_line(exc))
        return 2
    except Exception as exc:  # the promise is "never a traceback": name the failure instead
        _error(f"unexpected {type(exc).__name__}: {one_line(exc)} (please report it with the command that met it)")
        return 2


def _error(text: str) -> None:
    with contextlib.suppress(OSError):  # stderr itself is gone: the exit status is all that is left to say it
        print(f"error: {text}", file=sys.stderr, flush=True)


def _flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _stdout_closed() -> int:
    """The usual recipe for a closed pipe: point stdout at the null device so the interpreter's own flush at exit
    does not fail again, then exit :data:`CLOSED_STDOUT`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_STDOUT


def parser() -> argparse.ArgumentParser:
    """The ``moczarr-catalog`` argument parser (building it imports nothing heavy)."""
    top = argparse.ArgumentParser(
        prog="moczarr-catalog",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = top.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    return top


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("moczarr")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "unknown (not installed)"


def run(argv: list[str] | None = None) -> int:
    """:func:`main` without the error wrapper (exceptions propagate).

    An argument no command takes is refused with the usage of the command it
    was given to (and the nearest flag it has, when one is close).
    """
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra:
        command = _subparser(top, args.cmd)
        message = f"unrecognized arguments: {' '.join(extra)}"
        flags = [f for action in command._actions for f in action.option_strings]
        close = [m for e in extra if e.startswith("-") for m in difflib.get_close_matches(e.split("=")[0], flags, 1)]
        command.error(message + (f" (did you mean {' or '.join(dict.fromkeys(close))}?)" if close else ""))
    return args.run(args)


def _subparser(top: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (choices,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return choices.choices[name]
