"""What a Master changes in a live agent: messages into the running turn, the model
and thinking level, the todo list, and what the agent can take of these.

Every change is confirmed by the agent: ``set_model`` answers the model, and the
thinking level (which the agent clamps without a word) is read back with ``get_state``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from rawp_adapter_process._commands import AgentGone, CommandChannel
from rawp_adapter_process._models import (
    THINKING_LEVELS,
    ModelList,
    ModelRef,
    StateInfo,
    TodoAnswer,
    decode_as,
    find_model,
)
from rawp_adapter_process._plans import plan_entries, todo_phases
from rawp_adapter_process._wire import Response
from rawp_adapters import AgentFailure, ModelState, OperationRejected
from rawp_adapters.frames import ModelInfo, ModelSet, PlanEntry, PromptSteer

_STEER_COMMANDS = {"steer": "steer", "follow_up": "follow_up"}


class LiveControl:
    def __init__(self, channel: CommandChannel, timeout: float) -> None:
        self._channel = channel
        self._timeout = timeout
        self.model: str | None = None
        self.thinking_level: str | None = None
        self.host_tools = False
        """The agent takes ``set_host_tools`` (omp; pi answers ``Unknown command``)."""
        self.todos = False
        """The agent has a todo list (``todoPhases`` in its state: xcsh, omp)."""
        self.models = False
        """The agent lists its models (``get_available_models``), so it can switch them
        and set their thinking level (``set_thinking_level``: the family has both)."""

    async def probe(self) -> bool:
        """Read the model, thinking level and what the agent can do (once it is ready);
        False when the agent did not answer within ``command_timeout`` (it may not read
        its stdin), and is taken to have none of it. The bound is that of any command:
        omp on a loaded host can take seconds, and a shorter one lost what it can do."""
        with anyio.move_on_after(self._timeout):
            try:
                state = await self._state()
                # An empty host tool set changes nothing; only the answer matters.
                tools = await self._ask({"type": "set_host_tools", "tools": []})
                models = await self._ask({"type": "get_available_models"})
            except AgentFailure:
                return False
            self.todos = state.todoPhases is not None
            self.host_tools = tools.success
            self.models = models.success
            return True
        return False

    async def steer(self, message: PromptSteer) -> None:
        command: dict[str, Any] = {
            "type": _STEER_COMMANDS[message.delivery],
            "message": message.text,
        }
        if message.images:
            command["images"] = [
                {"type": "image", "data": image.data, "mimeType": image.media_type}
                for image in message.images
            ]
        response = await self._ask(command)
        if not response.success:
            raise OperationRejected(f"the agent did not take the message: {response.error}")

    async def list_models(self) -> list[ModelInfo]:
        return [model.info() for model in await self._models()]

    async def set_model(self, change: ModelSet) -> ModelState:
        """Both parts are checked before either is made: the agent takes any level of
        :data:`THINKING_LEVELS` (it clamps it to the model's), so a rejected change
        changes nothing."""
        level = change.thinking_level
        if level is not None and level not in THINKING_LEVELS:
            raise OperationRejected(
                f"no thinking level {level!r} (levels: {', '.join(THINKING_LEVELS)})"
            )
        if change.model is not None:
            models = await self._models()
            model = find_model(models, change.model)
            if model is None:
                known = ", ".join(m.dps_id for m in models)
                raise OperationRejected(f"the agent has no model {change.model!r} (it has {known})")
            await self._change(
                {"type": "set_model", "provider": model.provider, "modelId": model.id}
            )
        if level is not None:
            await self._change({"type": "set_thinking_level", "level": level})
        await self._state()
        return ModelState(model=self.model, thinking_level=self.thinking_level)

    async def set_plan(self, entries: Sequence[PlanEntry]) -> list[PlanEntry]:
        response = await self._change({"type": "set_todos", "phases": todo_phases(entries)})
        return plan_entries(decode_as(response.data, TodoAnswer).todoPhases)

    async def _models(self) -> list[ModelRef]:
        response = await self._ask({"type": "get_available_models"})
        if not response.success:
            raise AgentFailure.of(f"the agent could not list its models: {response.error}")
        return decode_as(response.data, ModelList).models

    async def _state(self) -> StateInfo:
        response = await self._ask({"type": "get_state"})
        state = decode_as(response.data, StateInfo)
        if state.model is not None:
            self.model = state.model.dps_id
        self.thinking_level = state.thinkingLevel
        return state

    async def _change(self, command: dict[str, Any]) -> Response:
        response = await self._ask(command)
        if not response.success:
            raise OperationRejected(f"the agent refused {command['type']}: {response.error}")
        return response

    async def _ask(self, command: dict[str, Any]) -> Response:
        try:
            return await self._channel.request(command, timeout=self._timeout)
        except TimeoutError:
            raise AgentFailure.of(
                f"the agent did not answer {command['type']} within {self._timeout:g} s"
            ) from None
        except AgentGone as exc:
            raise AgentFailure.of(f"the agent went away: {exc}") from exc
