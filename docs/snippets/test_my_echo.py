import pytest
from my_echo import EchoAdapter

from rawp_adapters.testing import ConformanceSubject, Prompts
from rawp_adapters.testing.pytest_plugin import ConformanceTests


@pytest.fixture
def rawp_subject() -> ConformanceSubject:
    return ConformanceSubject(
        make_adapter=lambda: EchoAdapter.from_settings({"prefix": "> "}),
        prompts=Prompts(answer="hello", tool="shout hello", busy="wait"),
        permission_timeout_ms=200,
    )


class TestEchoAdapter(ConformanceTests):
    pass
