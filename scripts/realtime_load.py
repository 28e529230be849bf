#!/usr/bin/env python3
"""How many live Realtime sessions one server process carries: N sessions at once, each
speaking at real-time pace, and the server's CPU meanwhile.

server.py runs in front of the tests' fake vLLM (`tests.fixtures.fake_vllm`, its own process,
so its CPU is not counted), both started by `tests.fixtures.process.running`, as
`scripts/webrtc_load.py` starts them. Each session streams 24 kHz PCM of real speech
(espeak-ng's, see `tests/fixtures/speech.py`): 3 s spoken, 1 s of silence, over and over, in
100 ms appends, paced by the clock, as a microphone sends it; with server VAD (Silero, the
default) and, to see what the VAD itself costs, with turn detection off (the client commits
every 4 s).
Prints, per session count and mode: the server's CPU in % of one core, that per session, the
sessions one core would carry at that rate, the transcripts that came back, and the share of
utterances the model transcribed twice (an utterance transcribed at a pause, then dropped
because speech went on: `qwen3_asr_realtime_speculations_total{outcome="dropped"}` over the
realtime transcriptions, from /metrics).

    .cache/test-venv/bin/python scripts/realtime_load.py --sessions 1,8,32 --seconds 20

--server-repo runs another checkout's server.py (the one before a change, say) with this
checkout's stand-in and sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import ClientConnection, connect

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from tests.fixtures.process import cpu_seconds, proxy_argv, running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"
CHUNK_SECONDS = 0.1
PATTERN = [(3.0, True), (1.0, False)]
COMPLETED = "conversation.item.input_audio_transcription.completed"


def _chunks() -> list[str]:
    """One 4 s cycle of speech and silence as base64 appends of 100 ms at 24 kHz."""
    pcm = (spoken(PATTERN, rate=24_000) * 32767).astype("<i2").tobytes()
    size = round(CHUNK_SECONDS * 24_000) * 2
    return [base64.b64encode(pcm[i : i + size]).decode() for i in range(0, len(pcm), size)]


async def _session(url: str, chunks: list[str], seconds: float, vad: bool) -> int:
    """Speak for `seconds`; the transcripts that came back."""
    completed = 0

    async def read(ws: ClientConnection) -> None:
        nonlocal completed
        async for message in ws:
            completed += json.loads(message)["type"] == COMPLETED

    async with connect(f"{url}/v1/realtime?intent=transcription", max_size=None) as ws:
        if not vad:
            session = {"type": "transcription", "audio": {"input": {"turn_detection": None}}}
            await ws.send(json.dumps({"type": "session.update", "session": session}))
        reader = asyncio.create_task(read(ws))
        start = time.monotonic()
        sent = 0
        while (elapsed := time.monotonic() - start) < seconds:
            chunk = chunks[sent % len(chunks)]
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
            sent += 1
            if not vad and sent % len(chunks) == 0:
                await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            await asyncio.sleep(max(0.0, sent * CHUNK_SECONDS - elapsed))
        await asyncio.sleep(1.0)  # the last transcripts
        reader.cancel()
    return completed


def _counts(url: str) -> tuple[float, float]:
    """The server's realtime transcriptions so far, and its dropped speculations."""
    text = httpx.get(url.replace("ws://", "http://") + "/metrics").text
    found = {"transcriptions": 0.0, "dropped": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "qwen3_asr_transcriptions_total":
                found["transcriptions"] += sample.value * (sample.labels["protocol"] == "realtime")
            elif sample.name == "qwen3_asr_realtime_speculations_total":
                found["dropped"] += sample.value * (sample.labels["outcome"] == "dropped")
    return found["transcriptions"], found["dropped"]


async def _load(url: str, pid: int, sessions: int, seconds: float, vad: bool) -> dict[str, float]:
    chunks = _chunks()
    counted = _counts(url)
    before = cpu_seconds(pid)
    started = time.monotonic()
    done = await asyncio.gather(*(_session(url, chunks, seconds, vad) for _ in range(sessions)))
    wall = time.monotonic() - started
    core = (cpu_seconds(pid) - before) / wall * 100
    transcribed, dropped = (after - then for after, then in zip(_counts(url), counted, strict=True))
    return {
        "sessions": sessions,
        "vad": vad,
        "cpu_percent_of_a_core": round(core, 1),
        "per_session_percent": round(core / sessions, 2),
        "sessions_per_core": round(100 / (core / sessions)) if core else 0,
        "transcripts": sum(done),
        "transcribed_twice": round(dropped / transcribed, 3) if transcribed else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,8,32", help="session counts (default: 1,8,32)")
    parser.add_argument("--seconds", type=float, default=20.0, help="per run (default: 20)")
    parser.add_argument("--server-repo", type=Path, default=REPO, help="whose server.py runs")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    upstream_port, port = free_port(), free_port()
    upstream, base = f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{port}"
    argv, env = stand_in_vllm(upstream_port, MODEL)
    counts = [int(each) for each in args.sessions.split(",")]
    server = proxy_argv(upstream, port, MODEL, "--max-sessions", str(max(counts)))
    server[1] = str(args.server_repo / "server.py")
    with (
        running(argv, env, upstream, 60),
        running(server, {}, base, 60) as pid,
    ):
        url = f"ws://127.0.0.1:{port}"
        rows = []
        print("sessions | turn detection | CPU, % of a core | per session | sessions per core")
        for count in counts:
            for vad in (True, False):
                row = asyncio.run(_load(url, pid, count, args.seconds, vad))
                rows.append(row)
                mode = "server_vad (Silero)" if vad else "off (commits)"
                print(
                    f"{count} | {mode} | {row['cpu_percent_of_a_core']} | "
                    f"{row['per_session_percent']}% | {row['sessions_per_core']} "
                    f"({row['transcripts']} transcripts, "
                    f"{row['transcribed_twice']:.0%} of them transcribed twice)"
                )
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
