"""What telemetry costs: frames/s and the permission round trip of an in-process session
(``bench_sdk``'s runs) and the frames/s of the stdio bridge (``bench_bridge``'s text
delta stream), each in three modes:

- **off**: nothing of OpenTelemetry imported (a bridge without ``OTEL_*``: today's path);
- **api**: the OpenTelemetry API imported, no provider configured (a host whose SDK
  imports it, say pydantic-ai's): telemetry still off;
- **on**: the SDK configured with a span exporter and a metric reader that do nothing,
  so what is measured is making the spans and metrics, not sending them.

Each mode runs in a fresh process, the modes in turn for ``--rounds`` rounds; medians.
Frames per CPU-second (the session's process alone) move less with the machine's load
than frames per second.
Target: off and api within 5% of each other (the hot path is the same); on is reported.

Run: ``.venv/bin/python benchmarks/bench_telemetry.py`` (about a minute; ``--help``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median

from benchmarks._common import Cell, build_text_deltas, print_machine, print_table
from benchmarks.bench_bridge import bridge_read

MODES = ("off", "api", "on")
SETUP = {
    "off": "",
    "api": "import opentelemetry.trace, opentelemetry.metrics\n",
    "on": (
        "from opentelemetry import metrics, trace\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "from opentelemetry.sdk.metrics.export import InMemoryMetricReader\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter\n"
        "from opentelemetry.sdk.trace.export import SpanExportResult\n"
        "class Nowhere(SpanExporter):\n"
        "    def export(self, spans): return SpanExportResult.SUCCESS\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(BatchSpanProcessor(Nowhere()))\n"
        "trace.set_tracer_provider(provider)\n"
        "metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))\n"
    ),
}
"""Run first in each mode's process."""
RUN_CLI = "import sys\nfrom rawp_adapters.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def in_process(mode: str, deltas: int, permissions: int) -> dict[str, float]:
    """One mode's in-process figures, measured in a fresh interpreter."""
    script = SETUP[mode] + (
        "import json, sys, anyio\n"
        "from benchmarks.bench_telemetry import measure_in_process\n"
        f"print(json.dumps(anyio.run(measure_in_process, {deltas}, {permissions})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=True, timeout=600
    )
    figures: dict[str, float] = json.loads(result.stdout)
    return figures


async def measure_in_process(deltas: int, permissions: int) -> dict[str, float]:
    from benchmarks.bench_sdk import bench_frames, bench_permission

    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        workspace = Path(tmp)
        cpu = time.process_time()
        frames_per_s = await bench_frames(workspace, deltas)
        cpu = time.process_time() - cpu
        p50, p99 = await bench_permission(workspace, permissions)
    return {
        "frames_per_s": frames_per_s,
        "frames_per_cpu_s": deltas / cpu,
        "p50_us": p50,
        "p99_us": p99,
    }


def bridge(mode: str, payload: Path, workspace: Path) -> dict[str, float]:
    """Frames per second and per CPU-second of one turn through ``serve --stdio``."""
    turn = bridge_read(payload, workspace, None, ("-c", SETUP[mode] + RUN_CLI))
    return {"frames_per_s": turn.frames / turn.elapsed, "frames_per_cpu_s": turn.frames / turn.cpu}


def _figures(*keys: str) -> dict[str, dict[str, list[float]]]:
    return {key: {mode: [] for mode in MODES} for key in keys}


def ratio_row(name: str, unit: str, by_mode: dict[str, list[float]]) -> list[Cell]:
    off = median(by_mode["off"])
    cells: list[Cell] = [f"{name} ({unit})"]
    for mode in MODES:
        cells.append(median(by_mode[mode]))
    cells += [f"{median(by_mode['api']) / off:.3f}x", f"{median(by_mode['on']) / off:.3f}x"]
    return cells


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the three modes")
    parser.add_argument("--deltas", type=int, default=300_000, help="in-process text deltas")
    parser.add_argument("--permissions", type=int, default=2_000, help="permission requests")
    parser.add_argument("--text-mib", type=int, default=256, help="bridge text-delta stream (MiB)")
    args = parser.parse_args(argv)

    print_machine()
    text, _ = build_text_deltas(args.text_mib)
    api = _figures("frames_per_s", "frames_per_cpu_s", "p50_us", "p99_us")
    bridged = _figures("frames_per_s", "frames_per_cpu_s")
    with tempfile.TemporaryDirectory(prefix="rawp-bench-") as tmp:
        for _ in range(args.rounds):
            for mode in MODES:
                for key, value in in_process(mode, args.deltas, args.permissions).items():
                    api[key][mode].append(value)
                for key, value in bridge(mode, text, Path(tmp)).items():
                    bridged[key][mode].append(value)
    print_table(
        f"Telemetry off / API only / on (no-op exporter), median of {args.rounds} rounds"
        " (target: api/off within 5%; on reported)",
        ["run", "off", "api", "on", "api/off", "on/off"],
        [
            ratio_row("API frames/s", f"{args.deltas:,} deltas", api["frames_per_s"]),
            ratio_row("API frames/CPU-s", "the same", api["frames_per_cpu_s"]),
            ratio_row("API permission p50", "µs", api["p50_us"]),
            ratio_row("API permission p99", "µs", api["p99_us"]),
            ratio_row(
                "bridge frames/s", f"{args.text_mib} MiB of text deltas", bridged["frames_per_s"]
            ),
            ratio_row("bridge frames/CPU-s", "the bridge's CPU", bridged["frames_per_cpu_s"]),
        ],
    )


if __name__ == "__main__":
    main()
