"""structlog loggers that behave like a library's should.

If the application configured structlog, its configuration is used. Otherwise the
events go to the standard ``logging`` module (key=value text), so nothing is
printed to stdout, the level is the application's, and a ``--stdio`` bridge
keeps stdout for frames. Each record carries ``trace_id`` and ``span_id`` while a
span is current (an application with its own configuration adds
:func:`rawp_adapters.telemetry.trace_ids` to its processors for that).
"""

from __future__ import annotations

import logging
from typing import Any

import structlog
from structlog.stdlib import BoundLogger

from rawp_adapters._telemetry import trace_ids

_PROCESSORS: list[structlog.typing.Processor] = [
    structlog.stdlib.filter_by_level,
    trace_ids,
    structlog.processors.format_exc_info,
    structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=False),
]


class _Logger(BoundLogger):
    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        # What filter_by_level would drop, dropped before the event is built: a debug
        # line on a hot path (a frame dropped) costs a level test, not the processors.
        if not self._logger.isEnabledFor(logging.DEBUG):
            return None
        return super().debug(event, *args, **kw)


def get_logger(name: str) -> BoundLogger:
    if structlog.is_configured():
        logger: BoundLogger = structlog.get_logger(name)
        return logger
    wrapped: BoundLogger = structlog.wrap_logger(
        logging.getLogger(name), processors=_PROCESSORS, wrapper_class=_Logger
    )
    return wrapped
