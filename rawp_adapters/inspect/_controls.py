"""What the page asks for (``{"op": "prompt", "text": …}``) as the control frame a
Master sends: every one a Master can. No I/O."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from rawp_adapters._control import ControlFrames
from rawp_adapters._frames import ControlFrame


class BadControl(ValueError):
    """A request the page made that is no control frame, with the reason."""


def _text(args: Mapping[str, Any], key: str = "text") -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise BadControl(f"{key!r} must be a non-empty string")
    return value


def _optional(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise BadControl(f"{key!r} must be a string")
    return value


_Build = Callable[[ControlFrames, Mapping[str, Any]], ControlFrame]

OPS: dict[str, _Build] = {
    "prompt": lambda c, a: c.prompt(_text(a)),
    "abort": lambda c, a: c.abort(_optional(a, "turn_id")),
    "steer": lambda c, a: c.steer(_text(a)),
    "follow_up": lambda c, a: c.follow_up(_text(a)),
    "set_model": lambda c, a: c.set_model(
        _optional(a, "model"), thinking_level=_optional(a, "thinking_level")
    ),
    "list_models": lambda c, a: c.list_models(),
    "plan": lambda c, a: c.set_plan(a.get("entries") or []),
    "compact": lambda c, a: c.compact(_optional(a, "instructions")),
    "mode": lambda c, a: c.switch_mode(a.get("mode")),  # type: ignore[arg-type]  # validated
    "end": lambda c, a: c.end(_optional(a, "reason")),
    "allow": lambda c, a: c.allow(_text(a, "interaction_id")),
    "deny": lambda c, a: c.deny(_text(a, "interaction_id")),
    "answer": lambda c, a: c.respond(_text(a, "interaction_id"), value=_text(a, "value")),
    "timeout": lambda c, a: c.timeout(_text(a, "interaction_id")),
}


def control_frame(control: ControlFrames, request: object) -> ControlFrame:
    """The frame ``request`` asks for, numbered by ``control``; :class:`BadControl`
    if it asks for none."""
    if not isinstance(request, dict):
        raise BadControl("the request must be a JSON object")
    op = request.get("op")
    build = OPS.get(op) if isinstance(op, str) else None
    if build is None:
        raise BadControl(f"unknown op {op!r}; known: {', '.join(OPS)}")
    try:
        return build(control, request)
    except (ValidationError, TypeError) as exc:
        raise BadControl(f"{op}: {exc}") from None
