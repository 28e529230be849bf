"""`server.py --workers N` as a real process: N workers on one port, one vLLM behind them."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from tests.fixtures import metrics
from tests.fixtures.harness import MODEL
from tests.fixtures.process import (
    ServerProcess,
    gone,
    holding,
    install_launcher,
    listening,
    workers,
)
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import speech_wav, spoken_pcm
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import StandInAligner

SPEECH = speech_wav(1.0)
ACCESS = re.compile(r"INFO \[(\d+)\] qwen3_asr_server\.access: .* path=/v1/audio/transcriptions ")


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> ServerProcess:
        server = ServerProcess(tmp_path, args, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        for pid in holding(f"FAKE_VLLM_RECORD={server.record}"):  # a worker a test left
            with_signal(pid, signal.SIGKILL)


@pytest.fixture
def upstream() -> Iterator[tuple[StandIn, list[str]]]:
    """A stand-in vLLM in this process, and the flags that put the server in front of it."""
    fake = StandIn(MODEL, describe=True)
    server = ThreadedServer(fake.app).start()
    yield fake, ["--backend-url", server.url, "--model", MODEL]
    server.stop()


def with_signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def post(url: str, timeout: float = 30, **fields: str) -> httpx.Response:
    """One transcription on a connection of its own (so that any worker may take it)."""
    return httpx.post(
        f"{url}/v1/audio/transcriptions",
        files={"file": ("a.wav", SPEECH)},
        data=fields,
        timeout=timeout,
    )


def at_once(
    count: int, call: Callable[[], httpx.Response], stagger: float = 0.0
) -> list[httpx.Response]:
    """`count` calls at the same time; `stagger` seconds apart, they find every worker free
    to accept (a burst of connections is taken by whichever worker wakes first)."""
    with ThreadPoolExecutor(count) as pool:
        pending = []
        for _ in range(count):
            pending.append(pool.submit(call))
            time.sleep(stagger)
        return [each.result() for each in pending]


def served_by(server: ServerProcess) -> set[int]:
    """The workers that answered transcriptions: the pid in their access log lines."""
    return {int(match.group(1)) for match in ACCESS.finditer(server.output())}


def metric(text: str, series: str) -> float:
    return metrics.value(text, series)


def until(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def two_workers(server: ServerProcess) -> set[int]:
    """The two workers, once both listen on the port."""
    until(lambda: len(found := workers(server.proc.pid)) == 2 and found <= listening(server.port))
    return workers(server.proc.pid)


def test_every_worker_answers_alike_and_metrics_are_the_sum(run_server, tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "2"])
    server.wait_for_health(200)
    two_workers(server)
    healths = [httpx.get(f"{server.url}/health").json() for _ in range(20)]
    expected = {"status": "ok", "model": "tiny", "backend": "vllm", "device": "cuda", "restarts": 0}
    assert all(health == expected for health in healths)
    listings = [httpx.get(f"{server.url}/v1/models").json() for _ in range(10)]
    assert all(listing == listings[0] for listing in listings)
    assert "tiny" in [model["id"] for model in listings[0]["data"]]
    sent = 0
    while len(served_by(server)) < 2:  # the kernel hands connections to either worker
        answers = at_once(8, lambda: post(server.url))
        assert [answer.json()["text"] for answer in answers] == ["Hello world."] * 8
        sent += 8
        assert sent <= 80, "one worker took every connection"
    scrapes = [httpx.get(f"{server.url}/metrics").text for _ in range(6)]
    ok = 'qwen3_asr_requests_total{method="POST",path="/v1/audio/transcriptions",status="200"}'
    for text in scrapes:  # whichever worker answers the scrape
        assert metric(text, ok) == sent
        audio = 'qwen3_asr_audio_seconds_total{protocol="http"}'
        assert metric(text, audio) == pytest.approx(sent * 1.0)
        assert metric(text, 'qwen3_asr_model_ready{backend="asr"}') == 1
        assert metric(text, 'qwen3_asr_backend_restarts_total{backend="asr"}') == 0
        assert metric(text, "qwen3_asr_upstream_in_flight") == 0
        assert metric(text, "qwen3_asr_requests_in_flight") == 1  # the scrape itself
        info = 'qwen3_asr_backend_info{backend="asr",device="cuda",model_id="tiny"}'
        assert metric(text, info) == 1
    assert len(server.starts()) == 1  # one vLLM for both workers


def test_a_vllm_restart_is_seen_and_counted_once(run_server, tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "2"])
    server.wait_for_health(200)
    two_workers(server)
    with_signal(server.starts()[0]["pid"], signal.SIGKILL)
    assert server.wait_for_health(503, timeout=10)["status"] == "down"
    server.wait_for_health(200)
    assert {httpx.get(f"{server.url}/health").json()["restarts"] for _ in range(10)} == {1}
    for _ in range(4):
        text = httpx.get(f"{server.url}/metrics").text
        assert metric(text, 'qwen3_asr_backend_restarts_total{backend="asr"}') == 1
    assert len(server.starts()) == 2
    assert post(server.url).json()["text"] == "Hello world."


def test_admission_limits_hold_for_all_workers_together(run_server, upstream) -> None:
    standin, flags = upstream
    standin.delay = 2
    server = run_server([*flags, "--workers", "2", "--max-concurrent", "2", "--max-queue", "3"])
    server.wait_for_health(200)
    two_workers(server)
    answers = at_once(16, lambda: post(server.url), stagger=0.05)
    statuses = [answer.status_code for answer in answers]
    assert set(statuses) <= {200, 429}
    assert standin.max_in_flight == 2  # never more in flight to vLLM, from both workers
    assert statuses.count(200) >= 5  # two at once, three more waiting in line
    assert statuses.count(429) >= 1
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert len(served_by(server)) == 2
    text = httpx.get(f"{server.url}/metrics").text
    assert metric(text, 'qwen3_asr_rejected_total{reason="queue_full"}') == statuses.count(429)
    assert metric(text, "qwen3_asr_upstream_in_flight") == 0
    assert metric(text, "qwen3_asr_queue_depth") == 0


def test_a_killed_worker_is_replaced_and_its_slots_freed(run_server, upstream) -> None:
    standin, flags = upstream
    server = run_server([*flags, "--workers", "2", "--max-concurrent", "1", "--queue-timeout", "2"])
    server.wait_for_health(200)
    first, second = sorted(two_workers(server))
    with_signal(first, signal.SIGKILL)
    assert gone([first], timeout=5)
    while workers(server.proc.pid) == {second}:  # the other one serves meanwhile
        assert post(server.url).status_code == 200
    replaced = two_workers(server)
    assert second in replaced
    assert first not in replaced
    server.wait_for_health(200)
    assert all(answer.status_code == 200 for answer in at_once(6, lambda: post(server.url)))

    # A worker killed while its request holds the only slot takes the slot with it
    standin.delay = 5

    def stranded() -> None:
        with contextlib.suppress(httpx.HTTPError):  # its worker dies under it
            post(server.url)

    request = threading.Thread(target=stranded)
    request.start()
    until(lambda: standin.in_flight == 1)
    for pid in replaced:  # whichever of them holds it
        with_signal(pid, signal.SIGKILL)
    request.join(10)
    until(lambda: len(workers(server.proc.pid) - replaced) == 2)
    standin.delay = 0
    server.wait_for_health(200)
    assert post(server.url).status_code == 200  # not a 429 after --queue-timeout
    text = httpx.get(f"{server.url}/metrics").text
    assert metric(text, "qwen3_asr_upstream_in_flight") == 0
    assert metric(text, "qwen3_asr_requests_in_flight") == 1
    assert "was killed by SIGKILL; starting another in" in server.output()


def test_a_worker_that_keeps_dying_is_started_again_later_each_time(run_server, upstream) -> None:
    """A request that crashes its worker, sent again and again, must not make a hot loop of
    restarts: each replacement waits twice as long as the last (0.5 s, 1 s, 2 s), the log
    says why each died, and /metrics counts the restarts."""
    server = run_server([*upstream[1], "--workers", "2"])
    server.wait_for_health(200)
    victim, other = sorted(two_workers(server))
    for pause in (0.5, 1.0, 2.0):  # the worker in one place, and each one put in its place
        with_signal(victim, signal.SIGKILL)
        killed = time.monotonic()
        until(lambda gone=victim: gone not in (now := workers(server.proc.pid)) and len(now) == 2)
        assert time.monotonic() - killed >= pause  # never sooner; later only on a slow day
        [replacement] = two_workers(server) - {other}
        assert f"(pid {victim}) was killed by SIGKILL; starting another in {pause:g} s" in (
            server.output()
        )
        victim = replacement
    server.wait_for_health(200)
    text = httpx.get(f"{server.url}/metrics").text
    restarts = [metric(text, f'qwen3_asr_worker_restarts_total{{worker="{i}"}}') for i in "01"]
    assert sum(restarts) == 3
    assert post(server.url).status_code == 200


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])  # HUP: a terminal closed
def test_sigterm_drains_every_worker_then_stops_vllm(run_server, tmp_path: Path, stop) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "2"], {"FAKE_VLLM_RESPONSE_DELAY": "2"})
    server.wait_for_health(200)
    pids = two_workers(server)
    with ThreadPoolExecutor(8) as pool:
        accepted = [pool.submit(post, server.url) for _ in range(8)]
        time.sleep(0.8)  # all eight are now waiting on vLLM
        server.proc.send_signal(stop)
        time.sleep(0.3)
        late = at_once(6, lambda: post(server.url))
        assert [answer.status_code for answer in late] == [503] * 6
        assert all(answer.headers["retry-after"] == "1" for answer in late)
        assert {answer.json()["error"]["code"] for answer in late} == {"server_shutting_down"}
        assert [each.result().status_code for each in accepted] == [200] * 8
    assert served_by(server) == pids
    assert server.wait_exit() == -stop
    start = server.starts()[0]
    assert gone([*pids, start["pid"], start["child"]], timeout=5)
    assert not holding(f"FAKE_VLLM_RECORD={server.record}")


def test_nothing_outlives_a_killed_main_process(run_server, tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "2"])
    server.wait_for_health(200)
    pids = two_workers(server)
    server.proc.kill()
    server.wait_exit()
    start = server.starts()[0]
    assert gone([*pids, start["pid"], start["child"]], timeout=20)
    until(lambda: not holding(f"FAKE_VLLM_RECORD={server.record}"))


def test_ctrl_c_stops_every_worker_and_vllm(run_server, tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "2"])
    server.wait_for_health(200)
    pids = two_workers(server)
    server.proc.send_signal(signal.SIGINT)
    assert server.wait_exit() == -signal.SIGINT
    start = server.starts()[0]
    assert gone([*pids, start["pid"], start["child"]], timeout=5)
    assert not holding(f"FAKE_VLLM_RECORD={server.record}")


def test_a_vllm_that_cannot_start_ends_every_worker(run_server, tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny", "--workers", "3"], {"FAKE_VLLM_EXIT_AT_START": "3"})
    assert server.wait_exit() == 1
    errors = [line for line in server.output().splitlines() if "qwen3-asr-server: error" in line]
    assert len(errors) == 1
    assert "exited with code 3 before it was ready" in errors[0]
    assert not holding(f"FAKE_VLLM_RECORD={server.record}")


async def test_realtime_streaming_and_words_work_through_workers(run_server, upstream) -> None:
    from tests.integration.realtime import test_realtime as realtime

    aligner = ThreadedServer(StandInAligner().app).start()
    try:
        server = run_server([*upstream[1], "--workers", "2", "--aligner-url", aligner.url])
        server.wait_for_health(200)
        two_workers(server)
        ws_url = server.url.replace("http://", "ws://")
        for _ in range(3):  # sessions on new connections, whichever worker takes each
            async with realtime.session(ws_url) as ws:
                await realtime.stream(ws, spoken_pcm(realtime.PATTERN))
                events = await realtime.until(ws, realtime.completed(2))
            done = realtime.of(events, realtime.TRANSCRIPTION + "completed")
            transcripts = [event["transcript"] for event in done]
            assert realtime.heard(transcripts) == pytest.approx([1.95, 2.45], abs=0.15)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
        for _ in range(3):
            pieces = client.audio.transcriptions.create(
                model=MODEL, file=("a.wav", SPEECH), stream=True
            )
            [done] = [event for event in pieces if event.type == "transcript.text.done"]
            assert done.text == "Heard 1.00 s."
            timed = client.audio.transcriptions.create(
                model=MODEL,
                file=("a.wav", SPEECH),
                response_format="verbose_json",
                timestamp_granularities=["word"],
            )
            assert [word.word for word in timed.words or []] == ["Heard", "100", "s"]
    finally:
        aligner.stop()


def _backlogs(port: int) -> list[int]:
    """The backlog of each socket listening on `port` (ss's Send-Q of a listener)."""
    lines = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return sorted(int(line.split()[2]) for line in lines)


@pytest.mark.parametrize("count", [1, 2])
def test_one_backlog_for_one_process_and_every_worker(run_server, upstream, count: int) -> None:
    server = run_server([*upstream[1], "--workers", str(count), "--backlog", "777"])
    server.wait_for_health(200)
    if count > 1:
        two_workers(server)
    assert _backlogs(server.port) == [777] * count


@pytest.mark.parametrize("count", [1, 2])
def test_the_vad_leaves_no_telemetry_files(
    run_server, upstream, tmp_path: Path, count: int
) -> None:
    """ONNX Runtime writes ~/.cache/Microsoft unless told not to, before it is imported: the
    entry points tell it, not the thread that loads the model."""
    home = tmp_path / "home"
    home.mkdir()
    server = run_server([*upstream[1], "--workers", str(count)], {"HOME": str(home)})
    server.wait_for_health(200)
    long = httpx.post(  # past --segment-seconds: cut where the VAD finds pauses
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("a.wav", speech_wav(40.0))},
        timeout=60,
    )
    assert long.status_code == 200
    assert list(home.iterdir()) == []
