"""The scripted OpenAI-compatible server in a process of its own, as a provider is to a
Master: the benchmark's process then holds only the Master's side (the session, the core,
the SDK), with no server thread taking its GIL or its CPU time.

In the benchmark's process the server's thread was a third thread trading the GIL with
the SDK's: on asyncio it runs with the interpreter's 5 ms switch interval, on trio with
the 0.1 ms an island thread sets, so the SDK alone measured differently on each loop
(pydantic-ai: 3,165 and 4,218 frames/s in one run), and its CPU counted as the SDK's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.support.llm_openai import ScriptedOpenAI


@dataclass(frozen=True, slots=True)
class ModelServer:
    """Where the scripted server answers."""

    base_url: str


@contextmanager
def model_server() -> Iterator[ModelServer]:
    """The scripted server in a child process, for as long as the block runs."""
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._model_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        base_url = server.stdout.readline().strip()
        if not base_url:
            raise RuntimeError(f"the scripted model server exited ({server.wait()})")
        yield ModelServer(base_url)
    finally:
        server.stdin.close()  # the server ends when its stdin does
        server.wait(timeout=10)


def _serve() -> None:
    with ScriptedOpenAI() as llm:
        print(llm.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    _serve()
