"""Run real xcsh-family peer agents (omp, pi) in ``--mode rpc``, isolated and offline.

``scripts/install-peers`` installs them from the npm registry into :data:`PEERS_DIR`
(``<repo>/.cache/peers/{omp,pi}``). :func:`make_peer` prepares a throw-away home for one run,
points the agent at a scripted LLM (``tests/support/llm_openai.py``) and returns the command
line and environment to spawn::

    with ScriptedOpenAI() as llm:
        agent = make_peer("omp", llm_base_url=llm.base_url, home=tmp_path / "run")
        proc = subprocess.Popen(agent.argv, env=agent.env, cwd=agent.cwd,
                                stdin=PIPE, stdout=PIPE, stderr=PIPE)

Layout under ``home`` (created): ``home/`` itself is ``$HOME``, ``home/tmp`` is ``$TMPDIR``,
``home/workspace`` is the default working directory (an agent whose cwd is ``$HOME`` moves
elsewhere, so the two must differ). Configuration written:

* omp: ``$HOME/.omp/agent/models.yml`` (the provider) and ``$HOME/.omp/agent/config.yml``
  (:data:`OMP_DISABLED_PROVIDERS`, so omp neither probes local LLM ports nor fetches provider
  catalogs, plus :data:`DEFAULT_SETTINGS` and the caller's ``settings``). Both files are JSON,
  which is valid YAML.
* pi: ``$PI_CODING_AGENT_DIR/models.json`` and ``settings.json`` with
  ``PI_CODING_AGENT_DIR=$HOME/.pi/agent``.

Environment: only ``PATH``, locale, ``USER``/``LOGNAME``/``SHELL``/``TERM``/``TZ`` are kept from
the caller; ``HOME``, ``TMPDIR``, ``XDG_*`` point under ``home``; ``PI_OFFLINE=1``,
``PI_NO_TITLE=1``; ``HTTP(S)_PROXY`` is a dead loopback port with ``NO_PROXY`` for loopback, so
nothing reaches the internet (also true for commands the agent's tools run).

The provider is :data:`PROVIDER` (``fake``) with one model :data:`MODEL_ID` (``fake-model``),
``api: openai-completions``. Ready signal: omp writes ``{"type": "ready", ...}`` first; pi
writes nothing until asked, so send ``{"id": ..., "type": "get_state"}`` and wait for the reply.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

__all__ = [
    "API_KEY",
    "DEFAULT_SETTINGS",
    "FAST_START_FLAGS",
    "MODEL_ID",
    "OMP_DISABLED_PROVIDERS",
    "OMP_PACKAGE",
    "OMP_VERSION",
    "PEERS_DIR",
    "PEER_NAMES",
    "PI_PACKAGE",
    "PI_VERSION",
    "PROVIDER",
    "REPO_ROOT",
    "PeerAgent",
    "PeerName",
    "installed_version",
    "make_peer",
    "peer_available",
    "peer_command",
]

PeerName = Literal["omp", "pi"]
PEER_NAMES: tuple[PeerName, ...] = get_args(PeerName)

REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = REPO_ROOT / ".cache" / "peers"

OMP_PACKAGE = "@oh-my-pi/pi-coding-agent"
OMP_VERSION = "18.2.3"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"

PROVIDER = "fake"
MODEL_ID = "fake-model"
API_KEY = "scripted-key"

#: Flags that make each agent start fast and ignore project/user setup (``--no-extensions`` is
#: added separately). pi rejects omp's ``--no-rules``/``--no-lsp`` ("Unknown options"); its
#: nearest equivalents are ``--no-context-files``, ``--no-prompt-templates``, ``--no-themes``.
FAST_START_FLAGS: dict[PeerName, tuple[str, ...]] = {
    "omp": ("--no-session", "--no-skills", "--no-rules", "--no-lsp"),
    "pi": (
        "--no-session",
        "--no-skills",
        "--no-context-files",
        "--no-prompt-templates",
        "--no-themes",
    ),
}
#: Built-in omp providers disabled in ``config.yml``: the local-LLM ones omp would otherwise
#: probe on 127.0.0.1 (ports 11434, 8080, 1234), and those whose model catalogs omp 18.2.3
#: fetches from the internet at every start even without credentials (seen with strace: DNS
#: lookups of hyper.charm.land, api.commandcode.ai, zenmux.ai, api.kilo.ai, api.venice.ai and
#: coding-intl.dashscope.aliyuncs.com). omp also fetches catalog.stencil.so whatever the
#: settings; the dead proxy below stops that one.
OMP_DISABLED_PROVIDERS = (
    "ollama",
    "llama.cpp",
    "lm-studio",
    "alibaba-coding-plan",
    "charm-hyper",
    "commandcode",
    "google-vertex",
    "kilo",
    "venice",
    "zenmux",
)
#: Settings written for both agents (omp ``config.yml``, pi ``settings.json``) unless
#: overridden: keep almost nothing verbatim on compaction, so that the ``compact`` command also
#: works on the tiny sessions of tests (omp otherwise answers "Nothing to compact (session too
#: small)" below ``compaction.keepRecentTokens`` = 20000).
DEFAULT_SETTINGS: dict[str, Any] = {"compaction": {"keepRecentTokens": 1}}
#: Variables kept from the caller's environment; everything else is dropped so that no
#: provider key, PI_*/XCSH_* setting or user config leaks into the run.
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "SHELL", "TERM")
#: Proxy for all non-local HTTP(S) of the agent and its tools: the discard port on loopback,
#: where nothing listens, so internet access fails at once and without DNS.
_DEAD_PROXY = "http://127.0.0.1:9"
_EXTENSION_FLAGS = ("-e", "--extension", "--hook")


def offline_env(home: Path) -> dict[str, str]:
    """An agent's environment with ``home`` as its whole world (``HOME``, ``TMPDIR``,
    the XDG folders) and no way out: proxies point at a dead port, loopback stays
    direct for the scripted LLM. omp, for one, fetches a model catalog at every start."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {key: os.environ[key] for key in _KEPT_ENV if key in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "NO_COLOR": "1",
            "HTTP_PROXY": _DEAD_PROXY,
            "HTTPS_PROXY": _DEAD_PROXY,
            "http_proxy": _DEAD_PROXY,
            "https_proxy": _DEAD_PROXY,
            "NO_PROXY": "127.0.0.1,localhost,::1",
            "no_proxy": "127.0.0.1,localhost,::1",
        }
    )
    return env


@dataclass(frozen=True)
class PeerAgent:
    """How to spawn one isolated peer agent in RPC mode.

    ``argv``: runtime, entry point and flags; ``env``: the complete environment (do not merge
    it into ``os.environ``); ``cwd``: the working directory to spawn in; ``home``: ``$HOME``;
    ``config_dir``: where the agent reads its provider config (``models.yml``/``models.json``).
    """

    name: PeerName
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    home: Path
    config_dir: Path


def _package_dir(name: PeerName) -> Path:
    package = OMP_PACKAGE if name == "omp" else PI_PACKAGE
    return PEERS_DIR / name / "node_modules" / package


def installed_version(name: PeerName) -> str | None:
    """Version of the installed agent package, or None when it is not installed."""
    manifest = _package_dir(name) / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def peer_command(name: PeerName) -> list[str]:
    """The runtime and entry point of the installed agent (no arguments)."""
    cli = str(_package_dir(name) / "dist" / "cli.js")
    if name == "omp":
        return [str(PEERS_DIR / "omp" / "node_modules" / ".bin" / "bun"), cli]
    return [shutil.which("node") or "node", cli]


def peer_available(name: PeerName) -> bool:
    """True when ``scripts/install-peers`` installed ``name`` at the pinned version."""
    expected = OMP_VERSION if name == "omp" else PI_VERSION
    if installed_version(name) != expected:
        return False
    runtime, cli = peer_command(name)
    if not Path(cli).is_file():
        return False
    if name == "omp":
        return os.access(runtime, os.X_OK)
    return shutil.which(runtime) is not None


def _model_entry(
    context_window: int, max_tokens: int, reasoning: bool, model_id: str = MODEL_ID
) -> dict[str, Any]:
    return {
        "id": model_id,
        "name": "Fake Model" if model_id == MODEL_ID else f"Fake Model ({model_id})",
        "reasoning": reasoning,
        "input": ["text"],
        "contextWindow": context_window,
        "maxTokens": max_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }


def _providers(
    llm_base_url: str,
    context_window: int,
    max_tokens: int,
    reasoning: bool,
    extra_models: Sequence[str] = (),
) -> dict[str, Any]:
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": llm_base_url,
                "apiKey": API_KEY,
                "api": "openai-completions",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    _model_entry(context_window, max_tokens, reasoning, model_id)
                    for model_id in (MODEL_ID, *extra_models)
                ],
            }
        }
    }


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated with ``extra``, recursing into nested mappings."""
    merged = dict(base)
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = _merge(current, value)
        else:
            merged[key] = value
    return merged


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_peer(
    name: PeerName,
    *,
    llm_base_url: str,
    home: Path,
    extra_args: Sequence[str] = (),
    cwd: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    context_window: int = 128_000,
    max_tokens: int = 4096,
    reasoning: bool = False,
    extra_models: Sequence[str] = (),
) -> PeerAgent:
    """Prepare an isolated run of peer ``name`` against the LLM at ``llm_base_url``.

    ``home`` becomes ``$HOME`` (created); ``$TMPDIR`` is ``home/tmp`` and the working directory
    ``cwd`` (default ``home/workspace``) is created too. ``extra_args`` are appended to the
    command line; ``--no-extensions`` is only passed when they load no extension (``-e``).
    ``extra_env`` is applied last. ``settings`` (nested, e.g. ``{"compaction": {"enabled":
    False}}``) are merged over :data:`DEFAULT_SETTINGS` into omp's ``config.yml`` / pi's
    ``settings.json``. ``extra_models`` are more model ids of the same provider (the agent
    starts with :data:`MODEL_ID`).
    """
    if name not in PEER_NAMES:
        raise ValueError(f"unknown peer {name!r} (expected one of {PEER_NAMES})")
    home = home.resolve()
    workspace = (cwd or home / "workspace").resolve()
    workspace.mkdir(parents=True, exist_ok=True)

    env = offline_env(home)
    env.update({"PI_OFFLINE": "1", "PI_NO_TITLE": "1"})

    agent_settings = _merge(DEFAULT_SETTINGS, settings or {})
    providers = _providers(llm_base_url, context_window, max_tokens, reasoning, extra_models)
    if name == "omp":
        config_dir = home / ".omp" / "agent"
        # JSON is valid YAML: no YAML library needed.
        _write(config_dir / "models.yml", json.dumps(providers, indent=2) + "\n")
        config = _merge({"disabledProviders": list(OMP_DISABLED_PROVIDERS)}, agent_settings)
        _write(config_dir / "config.yml", json.dumps(config, indent=2) + "\n")
        model_args = ["--model", f"{PROVIDER}/{MODEL_ID}"]
    else:
        config_dir = home / ".pi" / "agent"
        _write(config_dir / "models.json", json.dumps(providers, indent=2) + "\n")
        _write(config_dir / "settings.json", json.dumps(agent_settings, indent=2) + "\n")
        env["PI_CODING_AGENT_DIR"] = str(config_dir)
        model_args = ["--provider", PROVIDER, "--model", MODEL_ID]

    if extra_env:
        env.update(extra_env)

    extra = list(extra_args)
    flags = list(FAST_START_FLAGS[name])
    if not any(arg in _EXTENSION_FLAGS for arg in extra):
        flags.append("--no-extensions")
    argv = [*peer_command(name), "--mode", "rpc", *model_args, *flags, *extra]
    return PeerAgent(name=name, argv=argv, env=env, cwd=workspace, home=home, config_dir=config_dir)
