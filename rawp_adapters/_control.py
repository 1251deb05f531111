"""Building control frames (Master → Client) with their own ``seq``, for hosts and tests."""

from __future__ import annotations

import uuid
from typing import Any

from rawp_adapters._codec import utc_timestamp
from rawp_adapters._frames import (
    Decision,
    InteractionResponse,
    InteractionResponseFrame,
    InteractionTimeout,
    InteractionTimeoutFrame,
    Mode,
    ModeSwitch,
    ModeSwitchFrame,
    PromptAbort,
    PromptAbortFrame,
    PromptRequest,
    PromptRequestFrame,
    SessionCompact,
    SessionCompactFrame,
    SessionEnd,
    SessionEndFrame,
)


class ControlFrames:
    """Makes control frames for one session, numbering them 1, 2, 3…"""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._seq = 0

    def _envelope(self) -> dict[str, Any]:
        self._seq += 1
        return {"session_id": self.session_id, "seq": self._seq, "timestamp": utc_timestamp()}

    def prompt(
        self, text: str, *, prompt_id: str | None = None, input_type: str = "text"
    ) -> PromptRequestFrame:
        payload = PromptRequest.model_validate(
            {"prompt_id": prompt_id or str(uuid.uuid4()), "input_type": input_type, "text": text}
        )
        return PromptRequestFrame(payload=payload, **self._envelope())

    def abort(self, turn_id: str | None = None) -> PromptAbortFrame:
        return PromptAbortFrame(payload=PromptAbort(turn_id=turn_id), **self._envelope())

    def respond(
        self, interaction_id: str, decision: Decision | None = None, value: str | None = None
    ) -> InteractionResponseFrame:
        payload = InteractionResponse(interaction_id=interaction_id, decision=decision, value=value)
        return InteractionResponseFrame(payload=payload, **self._envelope())

    def allow(self, interaction_id: str) -> InteractionResponseFrame:
        return self.respond(interaction_id, "allow")

    def deny(self, interaction_id: str) -> InteractionResponseFrame:
        return self.respond(interaction_id, "deny")

    def timeout(self, interaction_id: str) -> InteractionTimeoutFrame:
        payload = InteractionTimeout(interaction_id=interaction_id)
        return InteractionTimeoutFrame(payload=payload, **self._envelope())

    def compact(self, custom_instructions: str | None = None) -> SessionCompactFrame:
        payload = SessionCompact(custom_instructions=custom_instructions)
        return SessionCompactFrame(payload=payload, **self._envelope())

    def switch_mode(self, mode: Mode) -> ModeSwitchFrame:
        return ModeSwitchFrame(payload=ModeSwitch(mode=mode), **self._envelope())

    def end(self, reason: str | None = None) -> SessionEndFrame:
        return SessionEndFrame(payload=SessionEnd(reason=reason), **self._envelope())
