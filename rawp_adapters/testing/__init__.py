"""Testing kit for rawp-adapters, public and for adapter authors too.

- :func:`drive` / :class:`SessionDriver`: play the Master against any adapter,
  answer interactions by a policy (:func:`allow_all`, :func:`deny_all`,
  :func:`never_answer` or your own; re-exported from :mod:`rawp_adapters.host`),
  with every wait bounded.
- :func:`check_frames` / :func:`assert_valid_stream`: the invariant checker
  (capabilities first, seq contiguous from 1, turn start/end pairing, error before
  an error end, tool call pairing, every interaction resolved, nothing after
  ``session.closed``); :class:`StreamChecker` runs it frame by frame on a live stream.
- The conformance kit: describe an adapter as a :class:`ConformanceSubject` (how to
  build it, which :class:`Prompts` make its agent answer, call a tool, stay busy) and
  :func:`check_adapter` runs every rule of :data:`RULES` (tiers MUST, CAPABILITY,
  ADVISORY) into a :class:`ConformanceReport`; :func:`run_conformance` does that in
  one call and raises on a failure. The pytest plugin
  (:mod:`rawp_adapters.testing.pytest_plugin`) and ``rawp-adapters check`` run it too.
  A subject's ``open_session`` (a :class:`SessionOpener`) says how its sessions are
  opened: in this process by default, or served elsewhere as any :class:`SessionLike`
  (a :class:`rawp_adapters.remote.RemoteSession`, say).
- :class:`FunctionAdapter`: an agent to test against offline, its turns run by a
  function (ready-made ones: :func:`say`, :func:`ask_permission`, :func:`stall`,
  :func:`use_host_tool`).
"""

from rawp_adapters.host import Policy, Reply, SessionLike, allow_all, deny_all, never_answer
from rawp_adapters.testing._catalogue import RULES, select_rules
from rawp_adapters.testing._conformance import run_conformance
from rawp_adapters.testing._driver import SessionDriver, TurnRecord, drive
from rawp_adapters.testing._function import (
    FunctionAdapter,
    TurnFunction,
    ask_permission,
    say,
    stall,
    use_host_tool,
)
from rawp_adapters.testing._invariants import (
    InvariantError,
    StreamChecker,
    Violation,
    assert_valid_stream,
    check_frames,
)
from rawp_adapters.testing._rule import ConformanceReport, Rule, RuleResult
from rawp_adapters.testing._runner import check_adapter, run_rule
from rawp_adapters.testing._subject import (
    KIT_HOST_TOOL,
    ConformanceSubject,
    Prompts,
    SessionOpener,
)

__all__ = [
    "KIT_HOST_TOOL",
    "RULES",
    "ConformanceReport",
    "ConformanceSubject",
    "FunctionAdapter",
    "InvariantError",
    "Policy",
    "Prompts",
    "Reply",
    "Rule",
    "RuleResult",
    "SessionDriver",
    "SessionLike",
    "SessionOpener",
    "StreamChecker",
    "TurnFunction",
    "TurnRecord",
    "Violation",
    "allow_all",
    "ask_permission",
    "assert_valid_stream",
    "check_adapter",
    "check_frames",
    "deny_all",
    "drive",
    "never_answer",
    "run_conformance",
    "run_rule",
    "say",
    "select_rules",
    "stall",
    "use_host_tool",
]
