"""The documentation site (``mkdocs.yml``, ``docs/``): it builds strictly with no network,
and the tables it generates come from the models, the factories and the README."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Literal

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from pydantic import BaseModel, Field

from docs.hooks.rawp_docstrings import markdown_docstring
from docs.hooks.rawp_site import (
    DocsError,
    options_table,
    readme_command,
    readme_table,
    retarget_links,
    settings_table,
)

ROOT = Path(__file__).resolve().parents[2]

README = """\
| agent | host tools | delegation (as parent) |
| --- | --- | --- |
| omp 18.2.3 (rpc) | ✔ | ✔ |
| demo core (`sdk`) | ✔ | ✔ |

```sh
rawp-adapters check sdk --tool-prompt "write kit.txt"
rawp-adapters check process --setting command='["omp","--mode","rpc"]' \\
  --tool-prompt "run ls"
```
"""


def _no_network(*args: object, **kwargs: object) -> Any:
    raise OSError("the site's build reached for the network")


def test_the_site_builds_strictly_without_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket, "getaddrinfo", _no_network)
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.chdir(ROOT)
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"))
    assert config.strict, "mkdocs.yml must build strictly: a warning fails the build"
    assert config.theme["font"] is False, "web fonts would be fetched by the browser"
    build(config)
    site = tmp_path / "site"

    def page(path: str) -> str:
        return (site / path / "index.html").read_text()

    assert "make demo" in page(".")
    pages = ("masters/python", "masters/host", "masters/stdio", "remote", "plugins", "conformance")
    for path in (*pages, "specs/dps-contract"):
        assert page(path), path
    # One page per agent family: its README rows and its settings table.
    families = {
        "process": ("<td>pi ", "permission_tools"),
        "acp": ("<td>claude-agent-acp ", "host_tools"),
        "codex": ("<td>Codex app-server ", "codex_home"),
        "sdk": ("<td>demo core ", "core_options"),
    }
    for family, (row, setting) in families.items():
        assert row in page(f"agents/{family}"), f"{family}: the README row is missing"
        assert f"<code>{setting}</code>" in page(f"agents/{family}"), f"{family}: settings"
    inspector = page("inspector")
    for view in ("timeline", "raw", "question", "violation", "large"):
        assert f'src="../images/inspector-{view}.png"' in inspector, view
        assert (site / "images" / f"inspector-{view}.png").exists(), view
    assert "control.prompt.request" in page("specs/dps-frames")
    # The API reference is rendered from the docstrings.
    assert "once the agent is ready" in page("api/rawp_adapters")


def test_a_settings_table_lists_every_field_with_its_type_default_and_description() -> None:
    class Inner(BaseModel):
        depth: int = Field(default=2, description="How deep.")

    class Settings(BaseModel):
        command: list[str] = Field(min_length=1, description="The command line.")
        mode: Literal["rpc", "json"] = Field(default="rpc", description="Which | mode.")
        names: list[str] = Field(default_factory=lambda: ["bash"], description="Gated.")
        timeout: float | None = Field(default=None, description="Seconds.")
        inner: Inner = Field(default_factory=Inner, description="Nested.")

    table = settings_table(Settings)

    assert table.splitlines()[2:7] == [
        "| `command` | `list[str]` | required | The command line. |",
        '| `mode` | `"rpc" | "json"` | `"rpc"` | Which \\| mode. |',
        '| `names` | `list[str]` | `["bash"]` | Gated. |',
        "| `timeout` | `float | None` | `null` | Seconds. |",
        "| `inner` | `Inner` | see below | Nested. |",
    ]
    assert "`Inner`:\n\n| setting | type | default | description |" in table
    assert table.endswith("| `depth` | `int` | `2` | How deep. |")


def test_an_options_table_is_the_factorys_docstring_and_keyword_arguments() -> None:
    class Core:
        """Options: ``model`` and ``delay_ms``."""

        def __init__(self, *, model: str, delay_ms: int = 15) -> None:
            del model, delay_ms

    assert options_table(Core).splitlines() == [
        "Options: `model` and `delay_ms`.",
        "",
        "| option | type | default |",
        "| --- | --- | --- |",
        "| `model` | `str` | required |",
        "| `delay_ms` | `int` | `15` |",
    ]


def test_a_core_that_takes_no_keyword_options_stops_the_build() -> None:
    class Core:
        def __init__(self, model: str) -> None:
            del model

    with pytest.raises(DocsError, match="no keyword options"):
        options_table(Core)


def test_a_readme_table_keeps_its_header_and_the_rows_that_match() -> None:
    assert readme_table(README, "operations", "`sdk`").splitlines() == [
        "| agent | host tools | delegation (as parent) |",
        "| --- | --- | --- |",
        "| demo core (`sdk`) | ✔ | ✔ |",
    ]
    assert len(readme_table(README, "operations").splitlines()) == 4


def test_a_readme_table_with_no_matching_row_stops_the_build() -> None:
    with pytest.raises(DocsError, match="no row"):
        readme_table(README, "operations", "acp")
    with pytest.raises(DocsError, match="no table"):
        readme_table(README, "features")


def test_a_readme_command_is_taken_whole_with_its_continuation_lines() -> None:
    assert readme_command(README, "check process") == (
        "```sh\n"
        'rawp-adapters check process --setting command=\'["omp","--mode","rpc"]\' \\\n'
        '  --tool-prompt "run ls"\n'
        "```"
    )
    with pytest.raises(DocsError, match="no code block"):
        readme_command(README, "check acp")


def test_links_point_at_the_site_or_become_the_repository_path() -> None:
    page = ROOT / "docs" / "masters" / "python.md"
    served = {"specs/dps-frames.md", "plugins.md"}
    markdown = (
        "[frames](../../specs/dps-frames.md#envelope) [guide](../plugins.md) "
        "[readme](../../README.md) [`specs/schemas`](../../specs/schemas) "
        "[gone](../../specs/gone.md) [web](https://example.org/x.md) [top](#top)"
    )

    retargeted = retarget_links(markdown, page, ROOT, lambda uri: uri if uri in served else None)

    assert retargeted == (
        "[frames](../specs/dps-frames.md#envelope) [guide](../plugins.md) "
        "readme (`README.md`) `specs/schemas` "
        "[gone](../../specs/gone.md) [web](https://example.org/x.md) [top](#top)"
    )


def test_docstrings_in_restructuredtext_read_as_markdown() -> None:
    text = (
        "Use :class:`~rawp_adapters.Session` (:mod:`rawp_adapters`) and ``send``, "
        "like this::\n\n    x = 1\n"
    )
    assert markdown_docstring(text) == (
        "Use `Session` (`rawp_adapters`) and `send`, like this:\n\n    x = 1\n"
    )
