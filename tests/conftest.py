"""Shared fixtures: a clean environment, the stand-in upstream, the app in-process or live.

The harness they build on is `tests.fixtures.harness`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.speech import onnx_models
from tests.fixtures.harness import MODEL, Harness, LiveServer, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

# a real PostgreSQL, for the tests of a jobs database several servers share
pytest_plugins = ("tests.fixtures.postgres",)

onnx_models.disable_telemetry()  # as the entry points do: the tests' apps run in this process


@pytest.fixture(scope="session", autouse=True)
def data_folder_of_the_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Servers that a module shares, started before any test's own folder is set, keep their
    files and batches in a folder of the test run, never in the machine's data folder."""
    os.environ["QWEN3_ASR_DATA_DIR"] = str(tmp_path_factory.mktemp("jobs-data"))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No setting leaks in from the machine running the tests, and no test's files and
    batches land in the machine's own data folder (nor in another test's)."""
    for name in list(os.environ):
        if name.startswith(("QWEN3_ASR_", "QWEN_API_KEY")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("QWEN3_ASR_DATA_DIR", str(tmp_path / "jobs-data"))


@pytest.fixture(params=["modern", "legacy"])
def standin(request: pytest.FixtureRequest) -> Iterator[tuple[StandIn, ThreadedServer]]:
    """The stand-in upstream in each of vLLM's two styles, on a real loopback port."""
    fake = StandIn(MODEL, request.param)
    server = ThreadedServer(fake.app).start()
    yield fake, server
    server.stop()


@pytest.fixture
async def harness(standin: tuple[StandIn, ThreadedServer]) -> AsyncIterator[Harness]:
    fake, server = standin
    async for h in start_harness(Settings(model=MODEL, backend_url=server.url), fake):
        yield h


@pytest.fixture
def live_server() -> Iterator[LiveServer]:
    """A live server with a stand-in that takes 20 ms an answer and names the audio's length."""
    server = LiveServer(StandIn(MODEL, delay=0.02, describe=True))
    yield server
    server.stop()
