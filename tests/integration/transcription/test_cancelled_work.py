"""A client that leaves while its upload is being planned takes the planning with it: the
server's CPU goes quiet at once, not when the thread would have finished, and the server
serves on. The recording is white noise, which Silero must hear whole (about 2 ms of CPU per
second of audio: seconds of work for 40 minutes)."""

from __future__ import annotations

import io
import time
import wave
from pathlib import Path

import httpx
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, cpu_seconds, install_launcher
from tests.fixtures.speech import noise_only

MINUTES = 40


def noise_wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(noise_only(MINUTES * 60, -30, "white").tobytes())
    return buffer.getvalue()


def test_a_client_gone_mid_planning_stops_its_thread(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    args = ["--model", "m", "--decode-workers", "1", "--max-upload-mb", "100"]
    server = ServerProcess(tmp_path, args)
    try:
        server.wait_for_health(200)
        url = f"{server.url}/v1/audio/transcriptions"
        timeout = httpx.Timeout(60, read=1.5)  # the client gives up once the upload is planned
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url, files={"file": ("noise.wav", noise_wav())}, timeout=timeout)
        time.sleep(1.0)  # the server sees the client gone
        began = cpu_seconds(server.proc.pid)
        time.sleep(2.0)
        assert cpu_seconds(server.proc.pid) - began < 0.5  # planning on would be a whole core
        answer = httpx.post(url, files={"file": ("a.wav", wav(1.0))}, timeout=30)
        assert answer.json()["text"] == "Hello world."
        assert "I/O operation on closed file" not in server.output()
    finally:
        server.stop()
