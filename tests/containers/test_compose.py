"""docker-compose.yml brought up with podman-compose, with compose.override.yml swapping what
cannot run here (the GPU reservations, the registry images): the manual's round trip, speech
from the TTS service to a file to a transcript from this server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from qwen3_asr_server.backend.launch import free_port
from tests.fixtures.podman import available, build, environment, podman, wait_for_health
from tests.fixtures.podman import readable_by_anyone as open_to_all
from tests.fixtures.process import REPO
from tests.fixtures.tiny_model import EXPECTED_TEXT, write_tiny_model

# the first test's setup builds the image: 15 minutes on a machine with no layers cached
pytestmark = [pytest.mark.container, pytest.mark.timeout(2400)]
COMPOSE = [str(Path(sys.executable).parent / "podman-compose")]
FILES = ["-f", "docker-compose.yml", "-f", "tests/containers/compose.override.yml"]


def compose(project: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMPOSE, *FILES, "-p", project, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """The project brought up: its name, the ASR server's URL and the TTS server's."""
    assert available(), "podman, runc and mmdebstrap are needed: scripts/test.sh installs them"
    build()
    model = write_tiny_model(tmp_path_factory.mktemp("model") / "tiny")
    open_to_all(model)
    asr, tts = free_port(), free_port()
    project = f"qwen3asr{asr}"
    env = {**environment(), "ASR_PORT": str(asr), "TTS_PORT": str(tts)}
    env["ASR_TEST_MODEL"] = str(model)
    env.pop("QWEN_API_KEY", None)
    try:
        up = compose(project, env, "up", "-d", "--no-build")  # the image is built already
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        yield project, f"http://127.0.0.1:{asr}", f"http://127.0.0.1:{tts}"
    finally:
        compose(project, env, "down", "-v")


def test_the_cache_helper_gave_the_asr_server_its_folder(loop: tuple[str, str, str]) -> None:
    project, asr, _ = loop
    wait_for_health(asr)
    state = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                   f"{project}_hf-cache-init_1")  # fmt: skip
    assert state.stdout.split() == ["exited", "0"]
    probe = 'touch "$HF_HOME/probe" && rm "$HF_HOME/probe" && echo "$HF_HOME" && id -u'
    answer = podman("exec", f"{project}_asr_1", "sh", "-c", probe).stdout.split()
    assert answer == ["/cache/huggingface/asr", "10001"]


def test_speech_from_the_tts_service_comes_back_as_text(
    loop: tuple[str, str, str], tmp_path: Path
) -> None:
    """The manual's round trip, with the openai SDK against both services."""
    _, asr, tts = loop
    wait_for_health(asr)
    assert httpx.get(f"{tts}/health").json()["model_ready"] is True
    speaker = openai.OpenAI(base_url=f"{tts}/v1", api_key="unused")
    speech = speaker.audio.speech.create(
        model="tts-1", voice="alloy", input="Hello from the other side.", response_format="wav"
    )
    saved = tmp_path / "hello.wav"
    saved.write_bytes(speech.content)
    assert saved.read_bytes()[:4] == b"RIFF"
    listener = openai.OpenAI(base_url=f"{asr}/v1", api_key="unused")
    with saved.open("rb") as file:
        text = listener.audio.transcriptions.create(model="whisper-1", file=file).text
    assert text == EXPECTED_TEXT  # what the tiny checkpoint says of any speech
