"""moczarr.tiles: map tiles of morton-hive stores in any morecantile grid, through rio-tiler.

:class:`HiveReader` is a ``rio_tiler.io.BaseReader`` over the hive reader;
:func:`clear_cache` forgets the stores and levels readers share. Needs the
``tiles`` extra (``pip install 'moczarr[tiles]'``); importing this package
without it raises :class:`~moczarr.errors.MissingExtraError` naming it.
"""

from ..errors import MissingExtraError

try:
    import morecantile  # noqa: F401
    import rio_tiler  # noqa: F401
except ImportError as exc:
    raise MissingExtraError.of("moczarr.tiles", "tiles", "rio-tiler and morecantile") from exc

from .cache import cache_info, clear_cache
from .levels import pick_order
from .reader import HiveReader

__all__ = ["HiveReader", "cache_info", "clear_cache", "pick_order"]
