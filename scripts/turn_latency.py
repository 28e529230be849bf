#!/usr/bin/env python3
"""How long after a Realtime speaker stops the transcript comes: server VAD turns, with the
model answering at once and answering slowly, side by side.

  python scripts/turn_latency.py [--model-ms 0,800] [--cycles 5] [--silence-ms 1000]
                                 [--server-repo PATH] [--json OUT]

For each --model-ms, starts the stand-in vLLM (tests/fixtures/fake_vllm.py, each answer taking
that long, as a model on a GPU would) and `server.py --backend-url` in front of it, both on
loopback, and speaks into one session as a microphone does: 24 kHz PCM of the tests'
espeak-ng speech in 100 ms appends paced by the clock, server VAD with --silence-ms. Each
cycle holds two turns: 1.5 s of speech, and 1.5 s + a 0.5 s pause + 0.8 s (a pause shorter
than the window, so one turn), each followed by 1.6 s of silence. Per turn it times
`conversation.item.input_audio_transcription.completed` from the `speech_stopped` event
(the window closed: the turn is committed) and from the end of its speech (when the append
holding the speech's last sample was sent; `audio_end_ms` less the server's 150 ms tail).
Prints, per model time, the median and p95 of each, and how many times the model was asked
per utterance (the stand-in's own count, FAKE_VLLM_ASKED: above 1, utterances transcribed
twice). --server-repo runs another checkout's server.py (the one before a change, say) with
this checkout's stand-in.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from websockets.asyncio.client import ClientConnection, connect

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark import percentile  # noqa: E402
from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from tests.fixtures.process import proxy_argv, running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"
RATE = 24_000
CHUNK = RATE // 10  # samples in an append of 100 ms
TAIL_MS = 150  # the server's audio after the last speech window (`entrypoints.realtime.turns`)
CYCLE = [(1.0, False), (1.5, True), (1.6, False), (1.5, True), (0.5, False), (0.8, True)]
CYCLE += [(1.6, False)]
EVENTS = "input_audio_buffer.speech_stopped", "conversation.item.input_audio_transcription."


async def speak(url: str, pcm: bytes, silence_ms: int, turns: int) -> list[dict[str, float]]:
    """One session, `pcm` spoken into it in real time: each turn's two clocks, in seconds."""
    stopped: dict[str, tuple[float, int]] = {}  # item: received, audio_end_ms
    done: dict[str, float] = {}
    sent: list[float] = []  # when each append was sent

    async def read(ws: ClientConnection) -> None:
        async for message in ws:
            event, now = json.loads(message), time.perf_counter()
            if event["type"] == EVENTS[0]:
                stopped[event["item_id"]] = now, event["audio_end_ms"]
            elif event["type"] == EVENTS[1] + "completed":
                done[event["item_id"]] = now
                if len(done) == turns:
                    return
            elif event["type"] in (EVENTS[1] + "failed", "error"):
                raise SystemExit(f"turn_latency.py: the server answered {event}")

    async with connect(f"{url}/v1/realtime?intent=transcription", max_size=None) as ws:
        vad = {"type": "server_vad", "silence_duration_ms": silence_ms}
        session = {"type": "transcription", "audio": {"input": {"turn_detection": vad}}}
        await ws.send(json.dumps({"type": "session.update", "session": session}))
        reader = asyncio.create_task(read(ws))
        start = time.perf_counter()
        for index, at in enumerate(range(0, len(pcm), CHUNK * 2)):
            await asyncio.sleep(max(0.0, start + (index + 1) / 10 - time.perf_counter()))
            chunk = base64.b64encode(pcm[at : at + CHUNK * 2]).decode()
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
            sent.append(time.perf_counter())
        async with asyncio.timeout(30):
            await reader  # until every turn is transcribed
    clocks = []
    for item, (received, end_ms) in stopped.items():
        last_append = sent[(end_ms - TAIL_MS) * RATE // 1000 // CHUNK]
        clocks.append({"stopped": done[item] - received, "speech_end": done[item] - last_append})
    return clocks


def summary(clocks: list[dict[str, float]], asked: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"turns": len(clocks), "asked_per_utterance": asked / len(clocks)}
    for clock in ("stopped", "speech_end"):
        values = [each[clock] * 1000 for each in clocks]
        figures[clock] = {
            "p50_ms": round(percentile(values, 0.5), 1),
            "p95_ms": round(percentile(values, 0.95), 1),
        }
    return figures


def measure(model_ms: float, pcm: bytes, args: argparse.Namespace, turns: int) -> dict[str, Any]:
    upstream_port, port = free_port(), free_port()
    upstream, url = f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{port}"
    stand_in, stand_in_env = stand_in_vllm(upstream_port, MODEL, model_ms)
    server = proxy_argv(upstream, port, MODEL)
    server[1] = str(args.server_repo / "server.py")
    with tempfile.TemporaryDirectory() as scratch:
        asked = Path(scratch) / "asked"
        asked.touch()
        with (
            running(stand_in, {**stand_in_env, "FAKE_VLLM_ASKED": str(asked)}, upstream, 60),
            running(server, {}, url, 60),
        ):
            ws_url = url.replace("http://", "ws://")
            clocks = asyncio.run(speak(ws_url, pcm, args.silence_ms, turns))
        return {"model_ms": model_ms, **summary(clocks, len(asked.read_text().splitlines()))}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model-ms", default="0,800", help="the stand-in's answer times")
    parser.add_argument("--cycles", type=int, default=5, help="of two turns each (default 5)")
    parser.add_argument("--silence-ms", type=int, default=1000, help="server VAD's window")
    parser.add_argument("--server-repo", type=Path, default=REPO, help="whose server.py runs")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    pattern = CYCLE * args.cycles
    pcm = (np.round(spoken(pattern, rate=RATE) * 32767)).astype("<i2").tobytes()
    rows = [measure(float(ms), pcm, args, 2 * args.cycles) for ms in args.model_ms.split(",")]
    print(
        "model ms | turns | stopped->completed p50 / p95 ms | speech end->completed "
        "p50 / p95 ms | model asked per utterance"
    )
    for row in rows:
        stopped, end = row["stopped"], row["speech_end"]
        print(
            f"{row['model_ms']:g} | {row['turns']} | {stopped['p50_ms']} / {stopped['p95_ms']} | "
            f"{end['p50_ms']} / {end['p95_ms']} | {row['asked_per_utterance']:.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
