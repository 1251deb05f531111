"""What the inspector serves ships in the wheel: no build step at install."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.inspect.conftest import fetch, inspector

ROOT = Path(__file__).resolve().parents[2]
PAGE = ("index.html", "inspector.js", "inspector.css")


def test_the_wheel_holds_the_page_and_the_inspector_it_installs_serves_it(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", ROOT],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("rawp_adapters-*.whl")
    installed = tmp_path / "installed"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)  # what installing a pure-Python wheel does
    env = {**os.environ, "PYTHONPATH": str(installed)}
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    where = subprocess.run(
        [sys.executable, "-c", "import rawp_adapters.inspect as m; print(m.__file__)"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert Path(where.stdout.strip()).is_relative_to(installed)
    static = installed / "rawp_adapters" / "inspect" / "static"
    with inspector(workspace, env=env) as server:
        status, _, page = fetch(server, "/", token=server.token)
        assert status == 200
        assert page.decode() == (static / "index.html").read_text().replace(
            "__TOKEN__", server.token
        )
        for name in PAGE[1:]:
            status, _, body = fetch(server, f"/static/{name}", token=server.token)
            assert (status, body) == (200, (static / name).read_bytes())
