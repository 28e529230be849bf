"""The budget of decoded audio (`--audio-budget-seconds`) against the real server process:
uploads that do not fit wait their turn, then get a clean 429; memory stays within the budget.

The stand-in vLLM answers only once the test opens its gate (`fixtures.gated`), so what is
held at once does not depend on how fast the machine is.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.fixtures.gated import Server, gated_server, settle
from tests.fixtures.speech import speech_wav

MIB = 1 << 20
RATE = 16000
BUDGET = 1200  # seconds of audio: 37.5 MiB decoded
LONG = 393  # seconds in each flooding upload (12 MiB): three fit in the budget
UPLOADS = 24
# What the flood may add to peak RSS beyond the budget's audio: the pieces' request bodies
# (8 pieces of 1.25 MiB per upload with room), the parsing of 24 uploads at once, and
# Silero's first load. Without the budget the 24 uploads held 288 MiB of audio alone.
OVERHEAD = 160 * MIB
BOUNDARY = "----qwen3asrbudgetboundary"


def _reserved(server: Server) -> float:
    return server.metric("qwen3_asr_audio_reserved_seconds")


def _refused(server: Server) -> float:
    return server.metric('qwen3_asr_rejected_total{reason="audio_budget"}', absent=0)


def test_a_flood_of_long_uploads_stays_within_the_budget(tmp_path: Path) -> None:
    """24 uploads of 6.5 minutes at once against a budget of 20 minutes: three are held, the
    rest wait `--queue-timeout` and get OpenAI's 429 with `Retry-After`; peak RSS grows by
    less than the budget plus a fixed overhead, and every second reserved comes back."""
    body = speech_wav(LONG)
    args = ["--audio-budget-seconds", str(BUDGET), "--queue-timeout", "4"]
    with gated_server(tmp_path, args) as server:
        url = f"{server.url}/v1/audio/transcriptions"
        baseline = server.memory("VmHWM")
        server.close()

        def upload(_: int) -> httpx.Response:
            return httpx.post(url, files={"file": ("long.wav", body)}, timeout=120)

        with ThreadPoolExecutor(UPLOADS) as pool:
            answers = pool.map(upload, range(UPLOADS))
            settle(lambda: _refused(server) == UPLOADS - 3, 60)  # the rest, after their wait
            held = _reserved(server)
            server.open()
            answers = list(answers)
        peak = server.memory("VmHWM") - baseline
        print(f"\nreserved {held:.0f} s; peak RSS +{peak / MIB:.0f} MiB")
        assert 3 * LONG - 3 <= held <= BUDGET
        statuses = [answer.status_code for answer in answers]
        assert statuses.count(200) == 3, statuses
        assert statuses.count(429) == UPLOADS - 3, statuses
        for answer in answers:
            if answer.status_code == 429:
                assert answer.headers["retry-after"] == "1"
                error = answer.json()["error"]
                assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
        assert peak < BUDGET * 2 * RATE + OVERHEAD
        settle(lambda: _reserved(server) == 0)
        assert _reserved(server) == 0
        assert _refused(server) == UPLOADS - 3
        assert server.transcribes()


def _stream(server: Server, seconds: float) -> socket.socket:
    """A raw connection that has sent a whole streamed upload of `seconds` of audio."""
    audio = speech_wav(seconds)
    body = (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="stream"\r\n\r\ntrue\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + audio
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    sock = socket.create_connection(("127.0.0.1", server.process.port), timeout=30)
    sock.sendall(
        (
            "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: asr\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    return sock


def test_a_request_waits_for_a_stream_to_end_then_is_served(tmp_path: Path) -> None:
    """A stream holds its audio until its events end, also when its client leaves: a request
    that does not fit beside it waits, and is served once the stream is over."""
    args = ["--audio-budget-seconds", "100", "--queue-timeout", "30"]
    with gated_server(tmp_path, args) as server:
        url = f"{server.url}/v1/audio/transcriptions"
        server.close()
        with _stream(server, 80) as sock, ThreadPoolExecutor(1) as pool:
            settle(lambda: _reserved(server) > 0)
            assert 80 <= _reserved(server) <= 81
            waiting = pool.submit(
                httpx.post, url, files={"file": ("b.wav", speech_wav(60))}, timeout=60
            )
            time.sleep(1)
            assert not waiting.done()
            assert 80 <= _reserved(server) <= 81
            server.open()
            assert b"transcript.text.done" in _read_all(sock)
            assert waiting.result().status_code == 200
        settle(lambda: _reserved(server) == 0)
        assert _reserved(server) == 0
        # a client that leaves its stream gives its audio back
        server.close()
        with _stream(server, 80):
            settle(lambda: _reserved(server) > 0)
            assert _reserved(server) >= 80
        settle(lambda: _reserved(server) == 0)
        assert _reserved(server) == 0
        server.open()
        assert server.transcribes()


def _read_all(sock: socket.socket) -> bytes:
    """What the server sends until its chunked answer ends."""
    received = b""
    while not received.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received
