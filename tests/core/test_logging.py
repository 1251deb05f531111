"""The library's loggers: structlog is imported only when an event is logged, and what is
logged is what structlog would have written."""

from __future__ import annotations

import subprocess
import sys

LOG_BELOW_THEN_AT_THE_LEVEL = """
import logging, sys
logging.basicConfig(level="INFO", stream=sys.stdout, format="%(levelname)s %(message)s")
from rawp_adapters._logging import get_logger
log = get_logger("test").bind(session_id="s1")
log.debug("dropped", n=1)
print("after debug:", "structlog" in sys.modules)
log.bind(turn_id="t1").info("kept", n=2)
print("after info:", "structlog" in sys.modules)
try:
    raise ValueError("boom")
except ValueError:
    log.exception("failed")
"""


def run(program: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_structlog_is_imported_at_the_first_event_the_level_lets_through() -> None:
    lines = run(LOG_BELOW_THEN_AT_THE_LEVEL)
    assert lines[0] == "after debug: False"
    assert lines[1] == "INFO event='kept' session_id='s1' turn_id='t1' n=2"
    assert lines[2] == "after info: True"
    assert lines[3].startswith("ERROR event='failed' session_id='s1' exception='Traceback")
    assert "ValueError: boom" in lines[3]


APPLICATION_CONFIGURED = """
import structlog
structlog.configure(
    processors=[structlog.processors.KeyValueRenderer()],
    logger_factory=structlog.PrintLoggerFactory(),
)
from rawp_adapters._logging import get_logger
get_logger("test").bind(session_id="s1").debug("shown", n=1)
"""


def test_an_application_that_configured_structlog_gets_its_own_configuration() -> None:
    assert run(APPLICATION_CONFIGURED) == ["session_id='s1' n=1 event='shown'"]
