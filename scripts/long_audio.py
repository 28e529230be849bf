#!/usr/bin/env python3
"""What a long recording costs the front end: decoding, planning and the request path.

  python scripts/long_audio.py [--minutes 60] [--snr 20] [--before PATH] [--concurrent 4]

Builds `--minutes` of the tests' two espeak-ng sentences in pink noise at `--snr`
(`tests.fixtures.speech.sentences_in_noise`), as an MP3 (libmp3lame's defaults), then:
1. in this process, on one thread, the CPU of decoding it (`audio.decode`) and of planning its
   pieces with `planning.split` and, side by side, with Silero over the whole recording (the
   plan before `planning`);
2. `server.py` (this checkout's, and with `--before PATH` another checkout's, e.g. a git
   worktree of an older commit) in front of `scripts/canned_upstream.py`, a vLLM that answers
   every piece at once: the server's CPU for the whole upload (decode, plan, every piece's
   request and answer), read from /proc, and its peak RSS;
3. with `--concurrent N`, N such uploads at once to this checkout's server (with
   `--server-args`, e.g. "--audio-budget-seconds 7200"): how each ended and the peak RSS.
Every figure is CPU seconds per audio hour; one run, so the rows compare on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.backend.launch import free_port  # noqa: E402
from qwen3_asr_server.speech import audio, planning, segmentation  # noqa: E402
from qwen3_asr_server.speech.silero import SpeechModel  # noqa: E402
from tests.fixtures.containers import encode  # noqa: E402
from tests.fixtures.process import cpu_seconds, memory, running  # noqa: E402
from tests.fixtures.speech import sentences_in_noise  # noqa: E402

RATE = 16_000
MODEL = "qwen3-asr"


def per_hour(cpu: float, seconds: float) -> float:
    return cpu / seconds * 3600


def timed(job: Callable[[], object]) -> float:
    """CPU seconds `job()` takes in this thread."""
    began = time.process_time()
    job()
    return time.process_time() - began


@contextmanager
def server(repo: Path, upstream: str, extra: list[str]) -> Iterator[tuple[str, int]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, str(repo / "server.py"), "--port", str(port)]
    argv += ["--backend-url", upstream, "--served-model-name", MODEL, "--max-upload-mb", "200"]
    with running([*argv, *extra], {}, url, 60) as pid:
        yield url, pid


async def upload(url: str, clip: bytes, count: int) -> list[str]:
    """`count` uploads of `clip` at once: how each ended (a status, or the error)."""
    async with httpx.AsyncClient(timeout=3600) as client:

        async def one() -> str:
            files = {"file": ("long.mp3", clip)}
            try:
                answer = await client.post(f"{url}/v1/audio/transcriptions", files=files)
            except httpx.HTTPError as exc:
                return type(exc).__name__
            return str(answer.status_code)

        return list(await asyncio.gather(*(one() for _ in range(count))))


def through(
    repo: Path, upstream: str, clip: bytes, seconds: float, count: int, extra: list[str]
) -> str:
    """A row: one server's CPU per audio hour, `count` uploads at once; its RSS idle and at
    its peak; how each upload ended."""
    with server(repo, upstream, extra) as (url, pid):
        asyncio.run(upload(url, clip[:1], 1))  # warm: the request path's imports (a 400)
        idle, began = memory(pid, "VmRSS"), cpu_seconds(pid)
        ended = asyncio.run(upload(url, clip, count))
        cpu, peak = per_hour(cpu_seconds(pid) - began, seconds * count), memory(pid, "VmHWM")
    return f"{cpu:.2f} s | {idle >> 20} MiB | {peak >> 20} MiB | {' '.join(ended)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--snr", type=float, default=20.0)
    parser.add_argument("--before", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--concurrent", type=int, default=0)
    parser.add_argument("--server-args", default="", help="for the --concurrent server")
    args = parser.parse_args()
    samples, _ = sentences_in_noise(args.minutes, args.snr)
    seconds = len(samples) / RATE
    clip = encode(samples / 32768, RATE, "mp3")
    model = SpeechModel()
    decode = timed(lambda: audio.decode(io.BytesIO(clip), 4 * 3600))
    plan = timed(lambda: planning.split(samples, model))
    whole = timed(lambda: segmentation.split(model.recording(samples), len(samples), 30.0))
    print(f"{seconds / 60:.0f} min of speech in pink noise at {args.snr:g} dB, "
          f"{len(clip) >> 20} MiB of MP3; CPU seconds per audio hour")  # fmt: skip
    print("step | CPU per audio hour")
    print(f"decode (PyAV) | {per_hour(decode, seconds):.2f} s")
    print(f"plan (planning.split) | {per_hour(plan, seconds):.2f} s")
    print(f"plan (Silero over all of it) | {per_hour(whole, seconds):.2f} s")
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    canned = [sys.executable, str(REPO / "scripts" / "canned_upstream.py"), "--port", str(port)]
    with running([*canned, "--model", MODEL], {}, upstream, 60):
        print("server | CPU per audio hour | idle RSS | peak RSS | statuses")
        checkouts = [("this checkout", REPO)]
        checkouts += [(str(args.before), args.before.resolve())] if args.before else []
        for label, repo in checkouts:
            print(f"{label} | {through(repo, upstream, clip, seconds, 1, [])}")
        if args.concurrent:
            extra = shlex.split(args.server_args)
            row = through(REPO, upstream, clip, seconds, args.concurrent, extra)
            print(f"{args.concurrent} at once {args.server_args} | {row}")


if __name__ == "__main__":
    main()
