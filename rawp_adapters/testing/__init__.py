"""Testing kit for rawp-adapters, public and for adapter authors too.

- :func:`drive` / :class:`SessionDriver`: play the Master against any adapter,
  answer interactions by a policy (:func:`allow_all`, :func:`deny_all`,
  :func:`never_answer` or your own; re-exported from :mod:`rawp_adapters.host`),
  with every wait bounded.
- :func:`check_frames` / :func:`assert_valid_stream`: the invariant checker
  (capabilities first, seq contiguous from 1, turn start/end pairing, error before
  an error end, tool call pairing, every interaction resolved, nothing after
  ``session.closed``).
- :func:`run_conformance`: put an adapter through the protocol's rules.
- :class:`FunctionAdapter`: an agent to test against offline, its turns run by a
  function (ready-made ones: :func:`say`, :func:`ask_permission`, :func:`stall`).
"""

from rawp_adapters.host import Policy, Reply, allow_all, deny_all, never_answer
from rawp_adapters.testing._conformance import run_conformance
from rawp_adapters.testing._driver import SessionDriver, TurnRecord, drive
from rawp_adapters.testing._function import (
    FunctionAdapter,
    TurnFunction,
    ask_permission,
    say,
    stall,
)
from rawp_adapters.testing._invariants import (
    InvariantError,
    Violation,
    assert_valid_stream,
    check_frames,
)

__all__ = [
    "FunctionAdapter",
    "InvariantError",
    "Policy",
    "Reply",
    "SessionDriver",
    "TurnFunction",
    "TurnRecord",
    "Violation",
    "allow_all",
    "ask_permission",
    "assert_valid_stream",
    "check_frames",
    "deny_all",
    "drive",
    "never_answer",
    "run_conformance",
    "say",
    "stall",
]
