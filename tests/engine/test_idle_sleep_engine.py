"""`--idle-sleep` on vLLM's CPU build, which has no sleep mode: the server stops the idle
vLLM and starts it again for the next request. The tests share one server and run in order."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from tests.engine.conftest import MODEL, STARTUP_TIMEOUT, Engine, start_engine
from tests.fixtures import metrics
from tests.fixtures.process import descendants
from tests.fixtures.speech import speech_wav
from tests.fixtures.tiny_model import EXPECTED_TEXT

pytestmark = pytest.mark.engine

CLIP = speech_wav(2.0)


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    # a wake is a whole vLLM start here: the request may wait as long as a start may take
    wake_timeout = str(STARTUP_TIMEOUT)
    yield from start_engine(tmp_path_factory, "--idle-sleep", "3", "--wake-timeout", wake_timeout)


def _backend_counts(engine: Engine) -> dict[str, float]:
    with engine.http(key=None) as http:
        page = http.get("/metrics").text
    counted = {}
    for name in ("restarts", "sleeps", "wakes"):
        series = f"qwen3_asr_backend_{name}_total"
        counted[name] = metrics.by_label(page, series, "backend")["asr"]
    waits = metrics.by_label(page, "qwen3_asr_wake_wait_seconds_count", "backend")
    counted["waited"] = waits.get("asr", 0.0)
    return counted


def _until_asleep(engine: Engine, timeout: float) -> dict:
    """Poll until the server has stopped vLLM to sleep (counted once it has gone); the
    /health answer then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _backend_counts(engine)["sleeps"] >= 1:  # and nothing wakes it meanwhile
            with engine.http(key=None) as http:
                health = http.get("/health")
            return {"code": health.status_code, **health.json()}
        time.sleep(0.5)
    raise AssertionError(f"vLLM never slept:\n{engine.server.output()[-5000:]}")


def test_an_idle_cpu_engine_is_stopped_and_health_says_sleeping(sleepy: Engine) -> None:
    health = _until_asleep(sleepy, 120)
    assert health == {
        "code": 200,
        "status": "sleeping",
        "model": MODEL,
        "backend": "vllm",
        "device": "cpu",
        "restarts": 0,
    }
    assert descendants(sleepy.server.proc.pid) == set()  # no vLLM, no engine core left
    assert "idle for 3 s: stopped" in sleepy.server.output()  # not vLLM's sleep mode


def test_the_next_request_starts_vllm_again_and_is_answered(sleepy: Engine) -> None:
    began = time.monotonic()
    with sleepy.http() as http:
        answer = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("clip.wav", CLIP, "audio/wav")},
            data={"model": MODEL},
            timeout=STARTUP_TIMEOUT,
        )
    wall = time.monotonic() - began
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == EXPECTED_TEXT
    counts = _backend_counts(sleepy)
    assert counts["restarts"] == 0  # a wake, not a crash's restart
    assert counts["wakes"] == 1
    assert counts["waited"] == 1  # this request, which waited for the wake
    log = sleepy.server.output()
    woke = re.findall(r"vLLM woke in (\d+\.\d+) s", log)
    assert len(woke) == 1, log[-5000:]
    assert log.count("Starting vllm: ") == 2  # launched, then again on waking
    print(f"\nCPU engine: the first answer after sleeping took {wall:.1f} s (woke in {woke[0]} s)")
