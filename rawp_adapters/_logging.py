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
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from rawp_adapters._telemetry import trace_ids

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger


def get_logger(name: str) -> BoundLogger:
    """The logger ``name``: structlog's own if the application configured structlog,
    else one that writes to the standard logger ``name``. That one imports structlog
    only at its first event the level lets through: a ``serve --stdio`` bridge that
    logs nothing at its level never pays for it."""
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        configured: BoundLogger = structlog.get_logger(name)
        return configured
    return cast("BoundLogger", _StdlibLogger(logging.getLogger(name), {}))


def _at_level(level: int, method: str) -> Callable[..., Any]:
    """The ``BoundLogger`` method ``method`` of a :class:`_StdlibLogger`: what ``level``
    drops costs a level test; the rest goes to the structlog logger, made then."""

    def log(self: _StdlibLogger, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._stdlib.isEnabledFor(level):
            return getattr(self._structlog(), method)(event, *args, **kw)
        return None

    log.__name__ = log.__qualname__ = method
    return log


class _StdlibLogger:
    """A structlog ``BoundLogger`` over a standard logger, made when first needed.

    What the level drops is dropped before anything is built (a debug line on a hot
    path, such as a frame dropped, costs a level test); ``bind`` keeps the values for
    later. Any other method of ``BoundLogger`` makes the structlog logger at once."""

    __slots__ = ("_bound", "_stdlib", "_values")

    def __init__(self, stdlib: logging.Logger, values: dict[str, Any]) -> None:
        self._stdlib = stdlib
        self._values = values
        self._bound: BoundLogger | None = None

    def bind(self, **values: Any) -> BoundLogger:
        if self._bound is not None:
            return self._bound.bind(**values)
        return cast("BoundLogger", _StdlibLogger(self._stdlib, {**self._values, **values}))

    debug = _at_level(logging.DEBUG, "debug")
    info = _at_level(logging.INFO, "info")
    warning = _at_level(logging.WARNING, "warning")
    error = _at_level(logging.ERROR, "error")
    exception = _at_level(logging.ERROR, "exception")
    critical = _at_level(logging.CRITICAL, "critical")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._structlog(), name)

    def _structlog(self) -> BoundLogger:
        if self._bound is None:
            import structlog

            processors: list[structlog.typing.Processor] = [
                structlog.stdlib.filter_by_level,
                trace_ids,
                structlog.processors.format_exc_info,
                structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=False),
            ]
            logger: BoundLogger = structlog.wrap_logger(
                self._stdlib, processors=processors, wrapper_class=structlog.stdlib.BoundLogger
            )
            self._bound = logger.bind(**self._values)
        return self._bound
