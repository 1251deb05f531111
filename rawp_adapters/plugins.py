"""What a plugin (an adapter or an adapter's own plugin group) builds on beyond the
adapter contract: entry-point lookup, loading an adapter class, and loggers that
behave as a library's should (nothing on stdout, the application's levels)."""

from rawp_adapters._logging import get_logger
from rawp_adapters._registry import ENTRY_POINT_GROUP, entry_points_by_name, load_adapter_class

__all__ = ["ENTRY_POINT_GROUP", "entry_points_by_name", "get_logger", "load_adapter_class"]
