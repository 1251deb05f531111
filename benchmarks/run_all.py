"""Run every ``bench_*.py`` next to this file, one after the other, and print their output.

Run: ``.venv/bin/python benchmarks/run_all.py``; each benchmark runs with its default
options. The exit status is non-zero when a benchmark failed to run (the figures
themselves are never judged).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed: list[str] = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.name} ===", flush=True)
        started = time.perf_counter()
        result = subprocess.run([sys.executable, str(script)], check=False)
        elapsed = time.perf_counter() - started
        status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
        print(f"=== {script.name}: {status} in {elapsed:.1f} s ===", flush=True)
        if result.returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nbenchmarks that failed to run: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
