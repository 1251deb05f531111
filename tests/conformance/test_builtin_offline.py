"""The conformance kit over the built-in adapters, offline: the sdk adapter with its demo
core, and the process adapter with the scripted RPC agent (tests/process/fakes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rawp_adapter_process import ProcessAdapter
from rawp_adapter_sdk import SdkAdapter

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests

RPC_AGENT = Path(__file__).parents[1] / "process" / "fakes" / "rpc_agent.py"


class TestTheSdkAdapterWithTheDemoCore(ConformanceTests):
    @pytest.fixture
    def rawp_subject(self) -> ConformanceSubject:
        def make_adapter() -> SdkAdapter:
            return SdkAdapter.from_settings(
                {
                    "core": "demo",
                    "core_options": {"delay_ms": 20},
                    "permission_timeout_ms": 1000,
                }
            )

        # Every demo prompt thinks, then asks to write a file; its stream lasts long
        # enough to abort (the thinking streams word by word).
        return ConformanceSubject(
            make_adapter,
            adapter_type="sdk",
            prompts=Prompts(
                answer="Say hello.",
                tool="Write notes.txt",
                busy="take your time",
                host_tool='call host tool kit_echo with {"message": "hi"}',
            ),
            timeout=30,
        )


class TestTheProcessAdapterWithTheScriptedRpcAgent(ConformanceTests):
    @pytest.fixture
    def rawp_subject(self) -> ConformanceSubject:
        def make_adapter() -> ProcessAdapter:
            command = [sys.executable, "-I", "-S", str(RPC_AGENT)]
            return ProcessAdapter.from_settings(
                {"command": command, "agent_name": "fake", "interaction_timeout_ms": 1000}
            )

        return ConformanceSubject(
            make_adapter,
            adapter_type="process",
            prompts=Prompts(answer="Say hello.", tool="TOOL echo hi", busy="HANG"),
            timeout=30,
        )
