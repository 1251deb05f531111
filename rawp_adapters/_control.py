"""Building control frames (Master → Client) with their own ``seq``, for hosts and tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from rawp_adapters._codec import utc_timestamp
from rawp_adapters._frames import (
    Decision,
    Delivery,
    FrameMetadata,
    HostTool,
    InteractionResponse,
    InteractionResponseFrame,
    InteractionTimeout,
    InteractionTimeoutFrame,
    Mode,
    ModelListRequestFrame,
    ModelSet,
    ModelSetFrame,
    ModeSwitch,
    ModeSwitchFrame,
    OutputType,
    PlanEntry,
    PlanSet,
    PlanSetFrame,
    PromptAbort,
    PromptAbortFrame,
    PromptRequest,
    PromptRequestFrame,
    PromptSteer,
    PromptSteerFrame,
    SessionCompact,
    SessionCompactFrame,
    SessionEnd,
    SessionEndFrame,
    ToolCatalogPublish,
    ToolCatalogPublishFrame,
    ToolResult,
    ToolResultFrame,
    ToolStream,
    ToolStreamFrame,
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

    def publish_tools(
        self, tools: Iterable[HostTool | Mapping[str, Any]]
    ) -> ToolCatalogPublishFrame:
        """The session's host tools (replacing earlier ones); ``[]`` withdraws them."""
        payload = ToolCatalogPublish.model_validate({"tools": list(tools)})
        return ToolCatalogPublishFrame(payload=payload, **self._envelope())

    def tool_stream(
        self, invocation_id: str, output: str, *, metadata: FrameMetadata | None = None
    ) -> ToolStreamFrame:
        payload = ToolStream(invocation_id=invocation_id, output=output)
        return ToolStreamFrame(payload=payload, metadata=metadata, **self._envelope())

    def tool_result(
        self,
        invocation_id: str,
        output: Any = None,
        *,
        output_type: OutputType = "text",
        is_error: bool = False,
        metadata: FrameMetadata | None = None,
    ) -> ToolResultFrame:
        payload = ToolResult(
            invocation_id=invocation_id, output_type=output_type, output=output, is_error=is_error
        )
        return ToolResultFrame(payload=payload, metadata=metadata, **self._envelope())

    def steer(
        self,
        text: str,
        *,
        delivery: Delivery = "steer",
        prompt_id: str | None = None,
        turn_id: str | None = None,
    ) -> PromptSteerFrame:
        payload = PromptSteer(
            prompt_id=prompt_id or str(uuid.uuid4()), text=text, delivery=delivery, turn_id=turn_id
        )
        return PromptSteerFrame(payload=payload, **self._envelope())

    def follow_up(self, text: str, *, prompt_id: str | None = None) -> PromptSteerFrame:
        return self.steer(text, delivery="follow_up", prompt_id=prompt_id)

    def set_model(
        self, model: str | None = None, *, thinking_level: str | None = None
    ) -> ModelSetFrame:
        payload = ModelSet(model=model, thinking_level=thinking_level)
        return ModelSetFrame(payload=payload, **self._envelope())

    def list_models(self) -> ModelListRequestFrame:
        return ModelListRequestFrame(**self._envelope())

    def set_plan(self, entries: Iterable[PlanEntry | Mapping[str, Any]]) -> PlanSetFrame:
        payload = PlanSet.model_validate({"entries": list(entries)})
        return PlanSetFrame(payload=payload, **self._envelope())
