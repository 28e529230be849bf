#!/usr/bin/env python3
"""What the server takes to answer once the audio is in: a Wyoming command beside HTTP uploads.

  python scripts/wyoming_latency.py [--runs 200] [--warmup 10] [--seconds 5] [--model-ms 0]
                                    [--json OUT]

Starts the stand-in vLLM (tests/fixtures/fake_vllm.py; --model-ms makes each answer take that
long, as a model would) and `server.py --backend-url` in front of it with `--wyoming-port`,
both on loopback. Then, with one clip (--seconds of the tests' espeak-ng speech, 16 kHz mono
16-bit), --warmup and then --runs of each, in turn:
- Wyoming, as Home Assistant sends a command: a connection of its own, `transcribe`,
  `audio-start`, an `audio-chunk` per 100 ms, `audio-stop`; timed from `audio-stop` written
  to `transcript` read (`transcript-start` and the chunks come before it);
- HTTP: POST /v1/audio/transcriptions with the clip as a WAV (multipart, the json format) on
  a connection of its own; timed from the request's last byte written to the answer's last
  byte read;
- the same with stream=true, to the end of the event stream: the server then asks vLLM for
  a streamed answer, as it does for every Wyoming command (its `transcript-chunk`s).
Sending the audio is in none; the stand-in's answer is in all, so the differences are the
server's own work once the audio is in (reading the upload and its WAV against the PCM a
Wyoming command already holds; vLLM's answer streamed or whole). Writes go to the kernel at
once (no buffering in this process), so each clock starts when the last byte is sent.
Prints the median and p90 of each side by side; --json writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wyoming.asr import Transcribe, Transcript  # noqa: E402
from wyoming.audio import AudioChunk, AudioStart, AudioStop  # noqa: E402
from wyoming.error import Error  # noqa: E402
from wyoming.event import async_read_event, async_write_event  # noqa: E402

from benchmark import percentile  # noqa: E402
from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from tests.fixtures.audio import pcm_wav  # noqa: E402
from tests.fixtures.process import running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"
RATE = 16_000
CHUNK = RATE * 2 // 10  # bytes of 100 ms, as a satellite sends them


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A loopback connection whose writes all go to the kernel before `drain` returns."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.transport.set_write_buffer_limits(high=0)
    return reader, writer


async def wyoming_once(port: int, pcm: bytes) -> tuple[float, str]:
    """One command: seconds from `audio-stop` sent to `transcript` read, and its text."""
    reader, writer = await _connect(port)
    try:
        await async_write_event(Transcribe(name=MODEL, language="en").event(), writer)
        await async_write_event(AudioStart(rate=RATE, width=2, channels=1).event(), writer)
        for start in range(0, len(pcm), CHUNK):
            chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[start : start + CHUNK])
            await async_write_event(chunk.event(), writer)
        await async_write_event(AudioStop().event(), writer)
        began = time.perf_counter()
        while True:
            event = await async_read_event(reader)
            if event is None:
                raise RuntimeError("the Wyoming connection closed before the transcript")
            if Error.is_type(event.type):
                raise RuntimeError(f"Wyoming error: {Error.from_event(event).text}")
            if Transcript.is_type(event.type):
                return time.perf_counter() - began, Transcript.from_event(event).text
    finally:
        writer.close()
        await writer.wait_closed()


def upload(wav: bytes, stream: bool) -> tuple[bytes, str]:
    """The multipart body of a transcription request for `wav`, and its boundary."""
    boundary = secrets.token_hex(16)
    part = f"--{boundary}\r\nContent-Disposition: form-data; name="
    body = f'{part}"model"\r\n\r\n{MODEL}\r\n'
    if stream:
        body += f'{part}"stream"\r\n\r\ntrue\r\n'
    body += f'{part}"file"; filename="clip.wav"\r\nContent-Type: audio/wav\r\n\r\n'
    return body.encode() + wav + f"\r\n--{boundary}--\r\n".encode(), boundary


async def answer_text(reader: asyncio.StreamReader) -> str:
    """The text of an answer whose headers are read: a JSON body of Content-Length bytes, or
    a chunked event stream (stream=true), whose `transcript.text.done` holds the text."""
    headers = await reader.readuntil(b"\r\n\r\n")
    if not headers.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"HTTP answer: {headers.decode(errors='replace')}")
    length = re.search(rb"(?im)^content-length: *(\d+)", headers)
    if length is not None:
        return str(json.loads(await reader.readexactly(int(length.group(1))))["text"])
    events = await reader.readuntil(b"\r\n0\r\n\r\n")  # the chunked body's last chunk
    done = re.search(rb'data: (\{"type": ?"transcript\.text\.done".*)', events)
    if done is None:
        raise RuntimeError(f"no transcript.text.done in {events!r}")
    return str(json.loads(done.group(1))["text"])


async def http_once(port: int, body: bytes, boundary: str) -> tuple[float, str]:
    """One upload: seconds from its last byte sent to the answer's last byte read, and the
    text."""
    reader, writer = await _connect(port)
    head = (
        f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        began = time.perf_counter()
        text = await answer_text(reader)
        return time.perf_counter() - began, text
    finally:
        writer.close()
        await writer.wait_closed()


def summary(seconds: list[float]) -> dict[str, float]:
    ms = [each * 1000 for each in seconds]
    return {"p50_ms": round(percentile(ms, 0.5), 2), "p90_ms": round(percentile(ms, 0.9), 2)}


LEGS = {  # the figures' names, and how the table calls them
    "wyoming": "Wyoming, audio-stop -> transcript",
    "http": "HTTP, last byte -> answer",
    "http_stream": "HTTP stream=true, last byte -> done",
}


async def measure(
    wyoming_port: int, http_port: int, pcm: bytes, runs: int, warmup: int
) -> dict[str, Any]:
    """`warmup` then `runs` of each leg, in turn: their figures and the texts they answered."""
    wav = pcm_wav(pcm)
    legs: dict[str, Callable[[], Awaitable[tuple[float, str]]]] = {
        "wyoming": lambda: wyoming_once(wyoming_port, pcm),
        "http": lambda: http_once(http_port, *upload(wav, stream=False)),
        "http_stream": lambda: http_once(http_port, *upload(wav, stream=True)),
    }
    times: dict[str, list[float]] = {name: [] for name in legs}
    texts = set()
    for index in range(warmup + runs):
        for name, once in legs.items():
            took, text = await once()
            texts.add(text)
            if index >= warmup:
                times[name].append(took)
    figures: dict[str, Any] = {name: summary(each) for name, each in times.items()}
    difference = figures["http"]["p50_ms"] - figures["wyoming"]["p50_ms"]
    return {**figures, "http_minus_wyoming_p50_ms": round(difference, 2), "texts": sorted(texts)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="of each (default: 200)")
    parser.add_argument("--warmup", type=int, default=10, help="of each, not counted (10)")
    parser.add_argument("--seconds", type=float, default=5.0, help="the clip's (default: 5)")
    parser.add_argument(
        "--model-ms", type=float, default=0.0, help="the stand-in's time per answer (default: 0)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    upstream_port, http_port = free_port(), free_port()
    wyoming_port = free_port()
    while wyoming_port == http_port:  # free_port may hand out the same one twice
        wyoming_port = free_port()
    upstream, url = f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{http_port}"
    stand_in, stand_in_env = stand_in_vllm(upstream_port, MODEL, args.model_ms)
    server = [sys.executable, str(REPO / "server.py"), "--backend-url", upstream]
    server += ["--served-model-name", MODEL, "--host", "127.0.0.1", "--port", str(http_port)]
    server += ["--log-level", "warning"]
    server += ["--wyoming-port", str(wyoming_port)]
    pcm = (np.round(spoken([(args.seconds, True)]) * 32767)).astype("<i2").tobytes()
    with running(stand_in, stand_in_env, upstream, 60), running(server, {}, url, 60):
        measured = asyncio.run(measure(wyoming_port, http_port, pcm, args.runs, args.warmup))
    figures = {
        "upstream": f"stand-in, {args.model_ms} ms",
        "clip_seconds": args.seconds,
        "runs": args.runs,
        **measured,
    }
    print(json.dumps(figures, indent=2))
    print(f"\n{'':<38}p50 ms    p90 ms")
    for name, label in LEGS.items():
        print(f"{label:<38}{figures[name]['p50_ms']:>6.2f}{figures[name]['p90_ms']:>10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
