#!/usr/bin/env python3
"""How many WebRTC calls one server process carries, beside as many WebSocket sessions: N of
each (one kind at a time), all speaking real speech at real-time pace, and the CPU per call.

server.py runs in front of the tests' stand-in vLLM (not counted), started as
`scripts/realtime_load.py` starts it. The callers run in `--client-processes` processes of
their own, whose CPU is read apart: a call is an aiortc peer whose track plays the tests'
espeak-ng speech (3 s spoken, 1 s of silence, over and over, 20 ms frames at 48 kHz that aiortc
encodes as Opus) and reads its `oai-events` channel; a session appends the same speech, 100 ms
of 24 kHz PCM at a time. Server VAD. CPU (user + system of a process and its threads, /proc)
is counted over `--seconds` from the moment every caller is connected; then each ends its
utterance, waits for the transcripts due and hangs up. A count "holds" when every call
connected, every utterance was transcribed within LATE_SECONDS of its speech's end, and the
callers kept pace; counts go up until one does not.

    .cache/test-venv/bin/python scripts/webrtc_load.py --calls 8,16,32,64 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path
from typing import Any

import av
import httpx
import numpy as np
import numpy.typing as npt
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from websockets.asyncio.client import connect

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from tests.fixtures.process import cpu_seconds, proxy_argv, running, stand_in_vllm  # noqa: E402
from tests.fixtures.speech import spoken  # noqa: E402

MODEL = "qwen3-asr"
PATTERN = [(3.0, True), (1.0, False)]  # one utterance a cycle, ended by the second of silence
COMPLETED = "conversation.item.input_audio_transcription.completed"
OPEN_SECONDS = 120.0  # for every call of a run to connect
LATE_SECONDS = 2.0  # a transcript later than this after its speech ended: the server fell behind
BEHIND_SECONDS = 0.5  # a caller this far behind real time in the steady part: callers fell behind
GRACE_SECONDS = 10.0  # after the steady part, for the transcripts still due


@dataclass
class Speaker:
    """One caller's voice at real-time pace: the speech cycle, `size` samples at a time, and
    when each utterance's last sample went out; once stopping, silence from the next cycle."""

    cycle: npt.NDArray[np.int16]
    rate: int
    sent: int = 0
    start: float | None = None
    stopping: bool = False
    quiet: asyncio.Event = field(default_factory=asyncio.Event)  # stopped: silence from now
    ends: list[float] = field(default_factory=list)
    behind: float = 0.0  # seconds, the most it fell behind the clock

    async def next(self, size: int) -> npt.NDArray[np.int16]:
        now = time.monotonic()
        self.start = self.start or now
        due = self.start + self.sent / self.rate
        if due > now:
            await asyncio.sleep(due - now)
        self.behind = max(self.behind, now - due)
        at = self.sent % len(self.cycle)
        if self.stopping and at == 0 and not self.quiet.is_set():
            self.cycle = np.zeros_like(self.cycle)
            self.quiet.set()
        speech_end = round(PATTERN[0][0] * self.rate)
        if at < speech_end <= at + size and not self.quiet.is_set():
            self.ends.append(time.monotonic())
        self.sent += size
        return self.cycle[at : at + size]


@dataclass
class Outcome:
    """What one caller saw: utterances sent and transcribed, each transcript's delay after
    its speech ended (s), the audio the stand-in heard in each (s), or why it failed."""

    sent: int = 0
    transcribed: int = 0
    delays: list[float] = field(default_factory=list)
    heard: list[float] = field(default_factory=list)
    behind: float = 0.0
    error: str | None = None
    refusals: list[str] = field(default_factory=list)  # the server's `error` events


class Transcripts:
    """The completed events one caller receives, matched to its utterances in order."""

    def __init__(self, speaker: Speaker) -> None:
        self.speaker = speaker
        self.outcome = Outcome()
        self.opened = asyncio.Event()
        self.changed = asyncio.Event()  # a transcript came

    def receive(self, message: str | bytes) -> None:
        event = json.loads(message)
        self.opened.set()  # session.created comes first
        if event["type"] == "error":
            self.outcome.refusals.append(event["error"]["message"])
        if event["type"] != COMPLETED:
            return
        ends, done = self.speaker.ends, self.outcome.transcribed
        if done < len(ends):
            self.outcome.delays.append(time.monotonic() - ends[done])
        self.outcome.transcribed += 1
        self.outcome.heard.append(float(event["transcript"].split()[1]))  # "Heard 3.45 s."
        self.changed.set()

    async def finish(self, stop: asyncio.Event) -> None:
        """After `stop`: the utterance going on ended, then its transcript and those due."""
        await stop.wait()
        self.speaker.stopping = True
        try:
            async with asyncio.timeout(GRACE_SECONDS + sum(s for s, _ in PATTERN)):
                await self.speaker.quiet.wait()
                while self.outcome.transcribed < len(self.speaker.ends):
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            pass  # what is missing shows as utterances sent but not transcribed


class Voice(MediaStreamTrack):
    """A microphone for aiortc: the speaker's samples as 20 ms frames at 48 kHz."""

    kind = "audio"

    def __init__(self, speaker: Speaker) -> None:
        super().__init__()
        self.speaker = speaker

    async def recv(self) -> av.AudioFrame:
        pts = self.speaker.sent
        samples = await self.speaker.next(960)
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 48_000
        frame.pts = pts
        frame.time_base = Fraction(1, 48_000)
        return frame


async def call(url: str, transcripts: Transcripts, stop: asyncio.Event) -> None:
    """A WebRTC call: offered, answered, its voice playing until `stop` and the transcripts
    due; then hung up."""
    speaker = transcripts.speaker
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    try:
        pc.addTrack(Voice(speaker))
        channel = pc.createDataChannel("oai-events")
        channel.on("message", transcripts.receive)
        await pc.setLocalDescription(await pc.createOffer())
        async with httpx.AsyncClient(timeout=OPEN_SECONDS) as http:
            answer = await http.post(
                f"{url}/v1/realtime/calls",
                content=pc.localDescription.sdp,
                headers={"Content-Type": "application/sdp"},
            )
        answer.raise_for_status()
        await pc.setRemoteDescription(RTCSessionDescription(answer.text, "answer"))
        await transcripts.finish(stop)
        if pc.connectionState != "connected":
            transcripts.outcome.error = f"the peer connection is {pc.connectionState}"
    finally:
        await pc.close()


async def session(url: str, transcripts: Transcripts, stop: asyncio.Event) -> None:
    """A WebSocket session sending the same voice as 100 ms appends at 24 kHz."""
    speaker = transcripts.speaker
    address = url.replace("http", "ws", 1) + "/v1/realtime?intent=transcription"
    async with connect(address, max_size=None) as ws:

        async def speak() -> None:
            while True:
                chunk = (await speaker.next(2400)).astype("<i2").tobytes()
                audio = base64.b64encode(chunk).decode()
                await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))

        async def read() -> None:
            async for message in ws:
                transcripts.receive(message)

        parts = [asyncio.create_task(speak()), asyncio.create_task(read())]
        try:
            await transcripts.finish(stop)
        finally:
            for part in parts:
                part.cancel()


KINDS = {"webrtc": (call, 48_000), "websocket": (session, 24_000)}


def callers(kind: str, url: str, count: int, ready: Queue[Any], stop: ProcessEvent) -> None:
    """One client process: `count` callers of `kind`; tells `ready` once all are connected
    (or failed), then speaks until `stop`; puts each caller's Outcome (as a dict) on `ready`."""
    outcomes = asyncio.run(_callers(kind, url, count, ready, stop))
    ready.put([asdict(outcome) for outcome in outcomes])


async def _callers(
    kind: str, url: str, count: int, ready: Queue[Any], stop: ProcessEvent
) -> list[Outcome]:
    client, rate = KINDS[kind]
    samples = (spoken(PATTERN, rate=rate) * 32767).astype(np.int16)
    stopped = asyncio.Event()
    everyone = [Transcripts(Speaker(samples.copy(), rate)) for _ in range(count)]
    tasks = [asyncio.create_task(client(url, each, stopped)) for each in everyone]
    await asyncio.gather(
        *(_connected(each, task) for each, task in zip(everyone, tasks, strict=True))
    )
    ready.put(sum(each.opened.is_set() for each in everyone))
    for each in everyone:  # from here on: the steady part
        each.speaker.behind = 0.0
    await asyncio.to_thread(stop.wait)
    stopped.set()
    for each, result in zip(
        everyone, await asyncio.gather(*tasks, return_exceptions=True), strict=True
    ):
        if isinstance(result, BaseException):
            each.outcome.error = repr(result)
        if not each.opened.is_set():
            each.outcome.error = each.outcome.error or "never connected"
        each.outcome.sent, each.outcome.behind = len(each.speaker.ends), each.speaker.behind
    return [each.outcome for each in everyone]


async def _connected(transcripts: Transcripts, task: asyncio.Task[None]) -> None:
    """Until the caller's session.created came, or the caller failed, or OPEN_SECONDS passed."""
    opened = asyncio.create_task(transcripts.opened.wait())
    await asyncio.wait([opened, task], timeout=OPEN_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    opened.cancel()


def measure(
    kind: str, url: str, server: int, count: int, processes: int, seconds: float
) -> dict[str, Any]:
    """`count` callers of `kind` over `processes` client processes: the CPU of the server and
    of the clients over `seconds` of all of them connected, and what the callers saw."""
    context = multiprocessing.get_context("spawn")
    ready: Queue[Any] = context.Queue()
    stop = context.Event()
    shares = [count // processes + (i < count % processes) for i in range(processes)]
    clients = [
        context.Process(target=callers, args=(kind, url, n, ready, stop)) for n in shares if n
    ]
    for client in clients:
        client.start()
    try:
        connected = sum(ready.get(timeout=OPEN_SECONDS + 60) for _ in clients)
        pids = [server] + [client.pid or 0 for client in clients]
        before, loop = [cpu_seconds(pid) for pid in pids], schedule(server)
        started = time.monotonic()
        time.sleep(seconds)
        after, wall = [cpu_seconds(pid) for pid in pids], time.monotonic() - started
        ran, waited = (b - a for a, b in zip(loop, schedule(server), strict=True))
        stop.set()
        outcomes = [Outcome(**each) for _ in clients for each in ready.get(timeout=120)]
    finally:
        stop.set()  # also when a client failed
        for client in clients:
            client.join(30)
    idle(url)
    used = [(a - b) / wall * 100 for a, b in zip(after, before, strict=True)]
    row = summary(kind, count, connected, used[0], sum(used[1:]), outcomes)
    times = {"server_loop_percent": ran, "server_loop_waiting_percent": waited}
    return {**row, **{key: round(value / wall * 100, 1) for key, value in times.items()}}


def schedule(pid: int) -> tuple[float, float]:
    """The seconds the server's main thread, its event loop (aiortc decodes each call's audio
    in a thread of its own), ran and waited for a core: the loop full, or starved."""
    ran, waited, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    return int(ran) / 1e9, int(waited) / 1e9


def idle(url: str) -> None:
    """Until the server holds no session: a hung-up call's seat is given back once the server
    sees the hang-up, which a loaded server sees late, and the next run needs every seat."""
    deadline = time.monotonic() + OPEN_SECONDS
    while "qwen3_asr_realtime_sessions 0.0" not in httpx.get(f"{url}/metrics", timeout=30).text:
        if time.monotonic() > deadline:
            sys.exit(f"webrtc_load.py: sessions still open {OPEN_SECONDS:.0f} s after a run")
        time.sleep(1)


def summary(
    kind: str, count: int, connected: int, server: float, clients: float, outcomes: list[Outcome]
) -> dict[str, Any]:
    """One row of the report; `server` and `clients`: CPU in % of one core."""
    delays = sorted(delay for each in outcomes for delay in each.delays)
    heard = [seconds for each in outcomes for seconds in each.heard]
    sent = sum(each.sent for each in outcomes)
    transcribed = sum(min(each.transcribed, each.sent) for each in outcomes)
    behind = max(each.behind for each in outcomes)
    failed = sum(each.error is not None for each in outcomes)
    refusals = [refusal for each in outcomes for refusal in each.refusals]
    broke = [
        f"{failed} failed ({next(e.error for e in outcomes if e.error)})" if failed else "",
        f"{sent - transcribed} of {sent} utterances not transcribed" if transcribed < sent else "",
        f"transcripts up to {delays[-1]:.1f} s late"
        if delays and delays[-1] > LATE_SECONDS
        else "",
        f"callers {behind * 1000:.0f} ms behind real time" if behind > BEHIND_SECONDS else "",
        f"{len(refusals)} error events ({refusals[0]})" if refusals else "",
    ]
    return {
        "kind": kind,
        "callers": count,
        "connected": connected,
        "server_cpu_percent": round(server, 1),
        "server_per_caller_percent": round(server / count, 2),
        "client_cpu_percent": round(clients, 1),
        "client_per_caller_percent": round(clients / count, 2),
        "utterances_sent": sent,
        "utterances_transcribed": transcribed,
        "delay_p50_s": round(delays[len(delays) // 2], 2) if delays else None,
        "delay_max_s": round(delays[-1], 2) if delays else None,
        "heard_mean_s": round(statistics.fmean(heard), 2) if heard else None,
        "callers_behind_max_s": round(behind, 3),
        "broke": [reason for reason in broke if reason],
    }


COLUMNS = [  # what the report prints of each pair of rows, WebRTC's and the WebSocket's
    ("server CPU per call, % of a core", "server_per_caller_percent", "%"),
    ("client CPU per call", "client_per_caller_percent", "%"),
    ("server event loop, % of a core", "server_loop_percent", "%"),
    ("its wait for a core", "server_loop_waiting_percent", "%"),
    ("utterances transcribed", "utterances_transcribed", ""),
    ("sent", "utterances_sent", ""),
    ("transcript after speech end, p50", "delay_p50_s", " s"),
    ("max", "delay_max_s", " s"),
    ("audio heard per utterance", "heard_mean_s", " s"),
]
HEADER = " | ".join(
    ["calls", f"{COLUMNS[0][0]}: WebRTC / WebSocket", "ratio"]
    + [f"{name}: WebRTC / WebSocket" for name, _, _ in COLUMNS[1:]]
    + ["WebRTC"]
)


def report(webrtc: dict[str, Any], websocket: dict[str, Any]) -> str:
    cells = [f"{webrtc[key]}{unit} / {websocket[key]}{unit}" for _, key, unit in COLUMNS]
    ratio = webrtc["server_per_caller_percent"] / max(websocket["server_per_caller_percent"], 1e-9)
    holds = "; ".join(webrtc["broke"]) or "holds"
    return " | ".join([str(webrtc["callers"]), cells[0], f"{ratio:.1f}x", *cells[1:], holds])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", default="8,16,32,64", help="call counts (default: 8,16,32,64)")
    parser.add_argument("--seconds", type=float, default=20.0, help="steady part (default: 20)")
    parser.add_argument("--client-processes", type=int, default=2, help="(default: 2)")
    parser.add_argument("--json", type=Path, help="write the rows as JSON")
    args = parser.parse_args()
    counts = [int(each) for each in args.calls.split(",")]
    upstream_port, port = free_port(), free_port()
    upstream, url = f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{port}"
    argv, env = stand_in_vllm(upstream_port, MODEL)
    rows = []
    with running(argv, {**env, "FAKE_VLLM_DESCRIBE": "1"}, upstream, 60):
        extra = ["--max-sessions", str(max(counts))]
        with running(proxy_argv(upstream, port, MODEL, *extra), {}, url, 60) as server:
            print(HEADER)
            for count in counts:
                pair = [
                    measure(kind, url, server, count, args.client_processes, args.seconds)
                    for kind in ("webrtc", "websocket")
                ]
                rows += pair
                print(report(*pair), flush=True)
                if pair[0]["broke"]:
                    break
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
