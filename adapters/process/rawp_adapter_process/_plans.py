"""The agent's todo list (omp's ``TodoPhase[]``) as a DPS plan, both ways.

omp keeps its todos in named phases of tasks; its ``todo`` tool reports the whole list
after each change in the result's ``details.phases``, ``set_todos`` replaces it and
``get_state`` shows it as ``todoPhases``. A DPS plan is a flat list of entries, each
naming its phase. Statuses the plan has no word for: ``blocked`` is still ``pending``;
``abandoned`` tasks are no longer part of the plan and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from rawp_adapters.frames import PlanEntry, PlanStatus

DEFAULT_PHASE = "Plan"
"""The phase of entries that name none (omp's tasks always belong to a phase)."""
TODO_TOOL = "todo"
_STATUSES: dict[str, PlanStatus] = {
    "pending": "pending",
    "blocked": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


class TodoTask(msgspec.Struct):
    content: str = ""
    status: str = "pending"


class TodoPhase(msgspec.Struct):
    name: str = ""
    tasks: list[TodoTask] = []


class TodoDetails(msgspec.Struct):
    """The ``details`` of a ``todo`` tool result (``view`` changes nothing)."""

    op: str | None = None
    phases: list[TodoPhase] | None = None


def plan_entries(phases: Sequence[TodoPhase]) -> list[PlanEntry]:
    return [
        PlanEntry(content=task.content, status=_STATUSES[task.status], phase=phase.name or None)
        for phase in phases
        for task in phase.tasks
        if task.status in _STATUSES
    ]


def todo_phases(entries: Sequence[PlanEntry]) -> list[dict[str, Any]]:
    """``set_todos`` phases: consecutive entries of one phase form it, in order."""
    phases: list[dict[str, Any]] = []
    for entry in entries:
        name = entry.phase or DEFAULT_PHASE
        if not phases or phases[-1]["name"] != name:
            phases.append({"name": name, "tasks": []})
        phases[-1]["tasks"].append({"content": entry.content, "status": entry.status})
    return phases


def changed_plan(details: msgspec.Raw) -> list[PlanEntry] | None:
    """The plan after a successful ``todo`` tool call, or None when it changed nothing."""
    if not details:
        return None
    try:
        decoded = msgspec.json.decode(details, type=TodoDetails)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if decoded.op == "view" or decoded.phases is None:
        return None
    return plan_entries(decoded.phases)
