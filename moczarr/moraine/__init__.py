"""moczarr.moraine: read moraine raster and point-cloud pyramids.

A separate format from the morton-hive stores: it shares only the error types, storage
and verifier findings with the hive reader, which never imports it. See
``docs/moraine.md``.
"""

from .reader import *  # noqa: F403 -- re-exports exactly reader.__all__, which this __all__ extends
from .reader import __all__ as _reader_all
from .verify import verify_moraine

__all__ = [*_reader_all, "verify_moraine"]
