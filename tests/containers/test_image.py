"""The CPU image, built from this repository as a user would (scripts/container-test.sh) and
run for real with podman: the tiny checkpoint mounted read-only, every way in exercised, the
image's own health check, its user, its cache, a `docker stop`, and what it carries. Its root
filesystem is read-only, with memory-backed folders where the Kubernetes pod mounts emptyDirs
(deploy/kubernetes): what the server and vLLM write goes there and to the model cache."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import pytest

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.serving import stop_time
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.podman import (
    CPU_IMAGE,
    RUN,
    available,
    build,
    image_size,
    podman,
    readable_by_anyone,
    wait_for_health,
)
from tests.fixtures.speech import speech_wav, spoken_pcm
from tests.fixtures.tiny_model import EXPECTED_TEXT, write_tiny_model
from tests.fixtures.websocket import connect

# the first test's setup builds the image: 15 minutes on a machine with no layers cached
pytestmark = [pytest.mark.container, pytest.mark.timeout(2400)]
MODEL = "qwen3-asr"
SHUTDOWN_TIMEOUT = 20  # --shutdown-timeout, given through its variable
# the writable places of a read-only root, as the Deployment's volumes give them; /data is
# the image's own volume (podman makes an anonymous one, owned as the image's folder is: a
# tmpfs there comes root's 0755 whatever its mode= says)
READ_ONLY = (
    "--read-only", "--read-only-tmpfs=false",
    "--tmpfs", "/tmp", "--tmpfs", "/home/asr/.cache:mode=1777",
)  # fmt: skip


@dataclass
class Running:
    name: str
    url: str
    statuses: list[int]  # /health from the moment the container was started until 200


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    assert available(), "podman, runc and mmdebstrap are needed: scripts/test.sh installs them"
    build()
    model = write_tiny_model(tmp_path_factory.mktemp("model") / "tiny")
    readable_by_anyone(model)
    port = free_port()
    name = f"qwen3-asr-test-{port}"
    podman("rm", "--force", name, check=False)
    podman(
        "run", "--detach", "--name", name, *RUN, *READ_ONLY,
        "--env", f"QWEN3_ASR_PORT={port}",
        "--env", f"QWEN3_ASR_SHUTDOWN_TIMEOUT={SHUTDOWN_TIMEOUT}",
        "--env", "HF_HUB_OFFLINE=1",
        "--volume", f"{model}:/model:ro",
        CPU_IMAGE,
        "--model", "/model", "--served-model-name", MODEL, "--max-model-len", "2048",
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        yield Running(name, url, wait_for_health(url))
    finally:
        podman("rm", "--force", "--volumes", name, check=False)


def test_health_says_loading_then_ok(container: Running) -> None:
    assert 503 in container.statuses  # vLLM was loading: the server answered, not ready
    assert container.statuses[-1] == 200
    body = httpx.get(f"{container.url}/health").json()
    assert (body["status"], body["model"], body["device"]) == ("ok", MODEL, "cpu")


def test_transcriptions_as_json_srt_and_stream(container: Running) -> None:
    client = openai.OpenAI(base_url=f"{container.url}/v1", api_key="none")
    clip = ("clip.wav", speech_wav(2.0))
    assert client.audio.transcriptions.create(model=MODEL, file=clip).text == EXPECTED_TEXT
    srt = client.audio.transcriptions.create(model=MODEL, file=clip, response_format="srt")
    assert srt == f"1\n00:00:00,000 --> 00:00:02,000\n{EXPECTED_TEXT}\n\n"
    events = list(client.audio.transcriptions.create(model=MODEL, file=clip, stream=True))
    deltas = "".join(e.delta for e in events if e.type == "transcript.text.delta")
    assert deltas == events[-1].text == EXPECTED_TEXT  # type: ignore[union-attr]


def test_a_realtime_session(container: Running) -> None:
    async def session() -> dict[str, str]:
        url = container.url.replace("http", "ws") + "/v1/realtime?intent=transcription"
        async with connect(url) as ws:
            data = spoken_pcm([(0.5, False), (2.0, True), (1.0, False)])
            for start in range(0, len(data), 4800):
                chunk = base64.b64encode(data[start : start + 4800]).decode()
                await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
            async with asyncio.timeout(120):
                while True:
                    event = json.loads(await ws.recv())
                    if event["type"].endswith("input_audio_transcription.completed"):
                        return dict(event)

    assert asyncio.run(session())["transcript"] == EXPECTED_TEXT


def test_it_runs_as_uid_10001_with_a_writable_model_cache(container: Running) -> None:
    users = podman("top", container.name, "user", "comm").stdout.split("\n")[1:]
    assert [line.split()[0] for line in users if line.strip()]  # server and vLLM
    assert {line.split()[0] for line in users if line.strip()} == {"asr"}
    probe = 'id -u && touch "$HF_HOME/probe" && rm "$HF_HOME/probe" && echo $HF_HOME'
    answer = podman("exec", container.name, "sh", "-c", probe).stdout.split()
    assert answer == ["10001", "/cache/huggingface"]


def test_its_root_filesystem_is_read_only(container: Running) -> None:
    """Everything above ran on a read-only root: the image's own folders cannot be written,
    the places the pod mounts can."""
    folders = "/app /home/asr /tmp /home/asr/.cache /data"
    probe = f"for d in {folders}; do touch $d/p 2>/dev/null && echo $d; done"
    writable = podman("exec", container.name, "sh", "-c", probe).stdout.split()
    assert writable == ["/tmp", "/home/asr/.cache", "/data"]


def test_the_images_own_health_check_passes(container: Running) -> None:
    configured = podman("inspect", "--format", "{{json .Config.Healthcheck}}", container.name)
    assert "/health" in configured.stdout
    assert podman("healthcheck", "run", container.name, check=False).returncode == 0


def test_the_image_is_lean_and_its_size_is_known() -> None:
    """No compiler, pip cache, tests or repository files; the size the manual gives."""
    look = (
        "for tool in gcc g++ cc c++ make; do command -v $tool; done; "
        "ls -d /root/.cache /app/tests /app/.git /app/.cache /app/build 2>/dev/null; "
        "find / -xdev -type d -name __pycache__ -path '/app/*' 2>/dev/null | head -1; true"
    )
    found = podman("run", "--rm", *RUN, "--entrypoint", "sh", CPU_IMAGE, "-c", look).stdout
    assert found.split() == []
    size = image_size(CPU_IMAGE)
    print(f"\nCPU image: {size / 1e9:.2f} GB")
    assert size < 3.5e9


def test_sigterm_stops_it_cleanly_and_quickly(container: Running) -> None:
    """`docker stop`: drained, vLLM stopped by SIGTERM (no SIGKILL), exit status 0, nothing
    left; well within the shutdown timeout. Runs last: it ends the container."""
    began = time.monotonic()
    grace = stop_time.stop_seconds(Settings(shutdown_timeout=SHUTDOWN_TIMEOUT)) + 5
    podman("stop", "--time", str(int(grace)), container.name)
    took = time.monotonic() - began
    state = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container.name)
    assert state.stdout.split() == ["exited", "0"]
    assert took < SHUTDOWN_TIMEOUT
    logs = podman("logs", container.name).stdout + podman("logs", container.name).stderr
    assert "Stopping vLLM" in logs
    assert "killing it" not in logs
    assert "Finished server process" in logs
    assert podman("top", container.name, check=False).returncode != 0  # no process is left


def test_the_model_was_mounted_read_only(container: Running) -> None:
    mounts = podman("inspect", "--format", "{{json .Mounts}}", container.name).stdout
    [mount] = [m for m in json.loads(mounts) if m["Destination"] == "/model"]
    assert mount["RW"] is False
