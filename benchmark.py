#!/usr/bin/env python3
"""Benchmark an OpenAI-compatible speech-to-text endpoint: qwen3-asr-server, vLLM, another proxy.

  ./benchmark.py FILE... [--url http://localhost:8000] [--api-key KEY] [--runs 5]
  ./benchmark.py --synthetic 5,30 --concurrency 1,4,16,64 --json out.json --plot out.png
  ./benchmark.py talk.wav --stream --compare http://localhost:8001 --compare-model MODEL_ID

Latency (always): per file, one warm-up request (not counted), then --runs requests one at a
time: mean ± stdev, p50 and p95 of the wall time, and "x real time" = audio seconds / mean wall
seconds (bigger is faster: 20x transcribes a minute of audio in 3 s).

Throughput (--concurrency 1,4,16,64): at each level N, a warm-up wave of N requests that opens
the connections (not counted), then N workers send max(--runs, 2N) requests, the files in
turn, in two batches: requests/s and audio seconds/s over the batches' wall time, p50/p95
latency, errors.

Streaming (--stream): requests send stream=true; the figures add the time to the first
transcript.text.delta event and to transcript.text.done (vLLM's own chunks and [DONE] count).

Comparison (--compare URL2): the same workload against a second OpenAI-compatible endpoint B
(vLLM itself, another proxy), in alternating batches A B A B in one run, so that machine noise
hits both alike. It prints B/A ratios of p50 latency, requests/s and time to first delta, and
the added median ms (A p50 - B p50): the proxy's overhead when A is the proxy and B its vLLM.

--synthetic 5,30 makes speech-like 16 kHz mono WAVs of those lengths (numpy if installed):
tone bursts, which an energy VAD takes for speech but a neural one mostly does not.
qwen3-asr-server sends a short json/text clip whole, but cuts longer audio (over 30 s) at the
pauses Silero VAD hears, which hears speech in only a few percent of these: measure long
audio with real recordings.
--json OUT writes every figure and the environment; --plot OUT.png draws latency and
requests/s against concurrency (needs matplotlib). rich, when installed, draws the tables and
a progress bar; PyAV or soundfile read the files' lengths (without them, only WAV's).

Exit status: 0 when every request succeeded; 1 when one failed (after the figures), or the
server cannot be reached or wants a key; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import io
import json
import math
import os
import platform
import random
import statistics
import sys
import time
import wave
from array import array
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    import httpx
except ImportError:  # the one dependency this script cannot do without
    sys.exit("benchmark.py needs httpx: pip install httpx")

PROG = "benchmark.py"
RATE = 16_000
AMPLITUDE = 0.3 * 32767
SHORT_CLIP_SECONDS = 30.0  # what qwen3-asr-server sends whole, without looking for speech


@dataclass
class Options:
    runs: int
    levels: list[int]
    stream: bool
    language: str | None
    timeout: float


@dataclass
class Clip:
    name: str
    data: bytes
    seconds: float | None  # None: length unreadable here (no x real time), still sent


@dataclass
class Target:
    label: str  # "A" (--url) or "B" (--compare)
    url: str
    api_key: str | None
    model: str | None
    key_option: str  # where its key comes from, for the 401 message
    reached: bool = False  # once it answered, a refused connection is a failed request


@dataclass
class Sample:
    audio: float | None
    wall: float = 0.0
    error: str | None = None
    first_delta: float | None = None
    done: float | None = None


@dataclass
class Latency:
    """Wall-time figures in milliseconds; None when no request succeeded."""

    mean_ms: float | None
    stdev_ms: float | None
    p50_ms: float | None
    p95_ms: float | None

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        if not seconds:
            return cls(None, None, None, None)
        ms = [value * 1000 for value in seconds]
        stdev = statistics.stdev(ms) if len(ms) > 1 else 0.0
        return cls(statistics.fmean(ms), stdev, percentile(ms, 0.5), percentile(ms, 0.95))


@dataclass
class FileResult:
    target: str
    url: str
    file: str
    audio_seconds: float | None
    runs: int  # measured requests that succeeded (the warm-up is not one)
    errors: int
    latency: Latency
    x_real_time: float | None  # audio seconds / mean wall seconds
    first_delta: Latency | None  # --stream: time to the first transcript.text.delta
    done: Latency | None  # --stream: time to transcript.text.done


@dataclass
class LevelResult:
    target: str
    url: str
    concurrency: int
    requests: int  # that succeeded
    errors: int
    wall_s: float
    requests_per_s: float
    audio_seconds_per_s: float | None
    latency: Latency
    first_delta: Latency | None


@dataclass
class Comparison:
    workload: str  # a file, or "concurrency N"
    a_p50_ms: float | None
    b_p50_ms: float | None
    p50_ratio_b_over_a: float | None
    added_p50_ms: float | None  # A p50 - B p50: what A adds over B
    throughput_ratio_b_over_a: float | None  # requests/s, concurrency levels only
    first_delta_ratio_b_over_a: float | None  # --stream
    added_first_delta_ms: float | None  # --stream: A p50 - B p50 of the time to a first delta


class Fatal(Exception):
    """A failure no further request can mend: nothing listens, or the key is missing/wrong."""


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(b: float | None, a: float | None) -> float | None:
    return b / a if a and b is not None else None


def synthetic_wav(seconds: float) -> bytes:
    """Speech-like 16 kHz mono 16-bit audio: voiced bursts of 80-400 ms (a pitch, two harmonics
    and a little noise under a smooth envelope) between pauses of 50-500 ms. A pure tone or
    noise would not exercise a server's pause detection the way speech does."""
    rng = random.Random(round(seconds * 1000))  # the same audio for the same length
    count = round(seconds * RATE)
    bursts: list[tuple[int, int, float]] = []
    at = min(int(rng.uniform(0.05, 0.2) * RATE), count // 4)
    while at < count:
        length = min(int(rng.uniform(0.08, 0.4) * RATE), count - at)
        bursts.append((at, length, rng.uniform(90.0, 260.0)))
        at += length + int(rng.uniform(0.05, 0.5) * RATE)
    try:
        pcm = _render_numpy(count, bursts, rng)
    except ImportError:  # numpy is optional: the stdlib renders the same shapes, slower
        pcm = _render_python(count, bursts, rng)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(pcm)
    return buffer.getvalue()


def _render_numpy(count: int, bursts: list[tuple[int, int, float]], rng: random.Random) -> bytes:
    import numpy as np

    noise = np.random.default_rng(rng.randrange(2**32))
    out = np.zeros(count)
    for start, length, pitch in bursts:
        k = np.arange(length)
        phase = 2 * np.pi * pitch * k / RATE
        voice = np.sin(phase) + np.sin(2 * phase) / 2 + np.sin(3 * phase) / 3
        envelope = np.sin(np.pi * k / length) ** 2
        out[start : start + length] = envelope * (0.6 * voice + 0.1 * noise.uniform(-1, 1, length))
    return bytes((out * AMPLITUDE).astype("<i2").tobytes())


def _render_python(count: int, bursts: list[tuple[int, int, float]], rng: random.Random) -> bytes:
    samples = array("h", bytes(2 * count))
    for start, length, pitch in bursts:
        for k in range(length):
            phase = 2 * math.pi * pitch * k / RATE
            voice = math.sin(phase) + math.sin(2 * phase) / 2 + math.sin(3 * phase) / 3
            envelope = math.sin(math.pi * k / length) ** 2
            value = envelope * (0.6 * voice + 0.1 * rng.uniform(-1, 1))
            samples[start + k] = int(AMPLITUDE * value)
    if sys.byteorder == "big":
        samples.byteswap()  # WAV is little-endian
    return samples.tobytes()


def _length_av(path: Path) -> float:
    import av

    with av.open(str(path)) as container:
        if container.duration:
            return float(container.duration / av.time_base)
        stream = container.streams.audio[0]
        return sum(frame.samples for frame in container.decode(stream)) / float(stream.rate)


def _length_soundfile(path: Path) -> float:
    return float(importlib.import_module("soundfile").info(str(path)).duration)


def _length_wave(path: Path) -> float:
    with wave.open(str(path), "rb") as wav:
        return wav.getnframes() / wav.getframerate()


def audio_seconds(path: Path) -> float | None:
    """The file's length by PyAV, soundfile or (neither installed) the stdlib's WAV reader."""
    for reader in (_length_av, _length_soundfile, _length_wave):
        try:
            return reader(path)
        except Exception:  # not installed, or not a format it reads: try the next one
            continue
    return None


def error_text(body: bytes) -> str:
    """The message of an OpenAI-shaped error, else the start of the body."""
    try:
        data = json.loads(body)
        error = data.get("error", data)
        return str(error.get("message") or error.get("detail") or data)[:300]
    except (ValueError, AttributeError):
        return body.decode(errors="replace").strip()[:300] or "(empty body)"


async def read_events(response: httpx.Response, start: float, sample: Sample) -> str | None:
    """Times the first delta and the done event; an error event or no done event fails."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        payload, now = line[5:].strip(), time.perf_counter() - start
        if payload == "[DONE]":  # vLLM's own transcription stream ends so
            sample.done = sample.done or now
            continue
        try:
            event = json.loads(payload)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            return f"not an event: {payload[:100]}"
        if "error" in event:
            return f"error event: {error_text(payload.encode())}"
        kind = event.get("type")
        choice = (event.get("choices") or [{}])[0]  # vLLM's chunks: choices[0].delta.content
        delta = event.get("delta") if kind else (choice.get("delta") or {}).get("content")
        if delta and sample.first_delta is None:
            sample.first_delta = now
        if kind == "transcript.text.done":
            sample.done = now
    return None if sample.done is not None else "the stream ended before transcript.text.done"


def answer_error(body: bytes) -> str | None:
    try:
        text = json.loads(body).get("text")
    except (ValueError, AttributeError):
        text = None
    return None if isinstance(text, str) else f"no text in the answer: {body[:100]!r}"


class Progress:
    """Progress on stderr, so stdout holds only figures: a rich bar on a terminal, else dots."""

    def __init__(self) -> None:
        self.rich = sys.stderr.isatty() and importlib.util.find_spec("rich") is not None
        self._advance: Any = None

    @contextlib.contextmanager
    def phase(self, label: str, total: int) -> Iterator[None]:
        if not self.rich:
            print(f"{label} ", end="", file=sys.stderr, flush=True)
            self._advance = lambda: print(".", end="", file=sys.stderr, flush=True)
            try:
                yield
            finally:
                print(file=sys.stderr)
            return
        from rich.console import Console
        from rich.progress import Progress as Bar

        with Bar(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(label, total=total)
            self._advance = lambda: bar.advance(task)
            yield

    def advance(self) -> None:
        self._advance()


class Bench:
    """One run: the HTTP client, the workloads, and every failure seen."""

    def __init__(
        self, client: httpx.AsyncClient, opts: Options, clips: list[Clip], targets: list[Target]
    ) -> None:
        self.client, self.opts, self.clips, self.targets = client, opts, clips, targets
        self.progress = Progress()
        self.failures: list[str] = []
        self.sent = 0

    async def request(self, target: Target, clip: Clip) -> Sample:
        """One timed transcription; a failure is recorded, not raised (bar Fatal ones)."""
        form = {"response_format": "json"}
        if target.model:
            form["model"] = target.model
        if self.opts.language:
            form["language"] = self.opts.language
        if self.opts.stream:
            form["stream"] = "true"
        headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
        files = {"file": (clip.name, clip.data, "application/octet-stream")}
        url = f"{target.url}/v1/audio/transcriptions"
        sample = Sample(clip.seconds)
        start = time.perf_counter()
        try:
            async with self.client.stream(
                "POST", url, data=form, files=files, headers=headers
            ) as response:
                target.reached = True
                if response.status_code == 401:
                    raise Fatal(unauthorized(target))
                if not response.is_success:
                    body = await response.aread()
                    sample.error = f"HTTP {response.status_code}: {error_text(body)}"
                elif self.opts.stream:
                    sample.error = await read_events(response, start, sample)
                else:
                    sample.error = answer_error(await response.aread())
        except httpx.ConnectError as exc:
            if not target.reached:
                raise Fatal(f"cannot reach {target.url}: is the server running?") from exc
            sample.error = f"cannot connect: {exc}"
        except httpx.HTTPError as exc:
            sample.error = f"{type(exc).__name__}: {exc}"
        sample.wall = time.perf_counter() - start
        if sample.error:
            self.failures.append(f"{target.label} {clip.name}: {sample.error}")
        self.sent += 1
        self.progress.advance()
        return sample

    async def batch(self, target: Target, count: int, level: int) -> tuple[list[Sample], float]:
        """`count` requests from `level` workers (the files in turn), and its wall time."""
        jobs = iter(range(count))
        samples: list[Sample] = []

        async def worker() -> None:
            for index in jobs:  # a shared iterator: a free worker takes the next request
                samples.append(await self.request(target, self.clips[index % len(self.clips)]))

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(min(level, count))))
        return samples, time.perf_counter() - start

    async def latency(self) -> list[FileResult]:
        """Per file: a warm-up, then --runs requests one at a time, alternating A B A B."""
        results: list[FileResult] = []
        for clip in self.clips:
            samples: dict[str, list[Sample]] = {t.label: [] for t in self.targets}
            with self.progress.phase(clip.name, (self.opts.runs + 1) * len(self.targets)):
                for round_ in range(self.opts.runs + 1):
                    for target in self.targets:
                        sample = await self.request(target, clip)
                        if round_:  # round 0 warms up connections, caches, lazy loading
                            samples[target.label].append(sample)
            results += [file_result(t, clip, samples[t.label], self.opts) for t in self.targets]
        return results

    async def sweep(self) -> list[LevelResult]:
        """Per level N: a warm-up wave of N requests, then max(--runs, 2N) requests in two
        batches per target, alternating A B A B."""
        results: list[LevelResult] = []
        for level in self.opts.levels:
            total = max(self.opts.runs, 2 * level)
            samples: dict[str, list[Sample]] = {t.label: [] for t in self.targets}
            walls = dict.fromkeys(samples, 0.0)
            with self.progress.phase(f"concurrency {level}", (level + total) * len(self.targets)):
                for target in self.targets:
                    await self.batch(target, level, level)  # opens the N connections
                for count in (total - total // 2, total // 2):
                    for target in self.targets:
                        got, wall = await self.batch(target, count, level)
                        samples[target.label] += got
                        walls[target.label] += wall
            for t in self.targets:
                results.append(level_result(t, level, samples[t.label], walls[t.label], self.opts))
        return results


def unauthorized(target: Target) -> str:
    who = "the server" if target.label == "A" else target.url
    if target.api_key:
        return f"{who} refused the API key: pass the right one with {target.key_option}"
    return f"{who} wants an API key: pass {target.key_option}"


def _stream_latency(samples: list[Sample], attribute: str, opts: Options) -> Latency | None:
    if not opts.stream:
        return None
    return Latency.of([v for s in samples if (v := getattr(s, attribute)) is not None])


def file_result(target: Target, clip: Clip, samples: list[Sample], opts: Options) -> FileResult:
    ok = [s for s in samples if s.error is None]
    latency = Latency.of([s.wall for s in ok])
    mean = latency.mean_ms
    speed = clip.seconds / (mean / 1000) if clip.seconds and mean else None
    first, done = _stream_latency(ok, "first_delta", opts), _stream_latency(ok, "done", opts)
    errors = len(samples) - len(ok)
    return FileResult(
        target.label, target.url, clip.name, clip.seconds, len(ok), errors, latency, speed,
        first, done,
    )  # fmt: skip


def level_result(
    target: Target, level: int, samples: list[Sample], wall: float, opts: Options
) -> LevelResult:
    ok = [s for s in samples if s.error is None]
    known = ok and all(s.audio is not None for s in ok)
    audio = sum(s.audio or 0 for s in ok) / wall if known else None
    return LevelResult(
        target.label, target.url, level, len(ok), len(samples) - len(ok), wall, len(ok) / wall,
        audio, Latency.of([s.wall for s in ok]), _stream_latency(ok, "first_delta", opts),
    )  # fmt: skip


def compare(files: list[FileResult], levels: list[LevelResult]) -> list[Comparison]:
    """B/A per workload (results come in A, B pairs)."""
    out: list[Comparison] = []
    workloads: list[tuple[str, Any, Any, float | None, float | None]] = [
        (a.file, a, b, None, None) for a, b in zip(files[::2], files[1::2], strict=True)
    ]
    workloads += [
        (f"concurrency {a.concurrency}", a, b, a.requests_per_s, b.requests_per_s)
        for a, b in zip(levels[::2], levels[1::2], strict=True)
    ]
    for name, a, b, a_rate, b_rate in workloads:
        a_p50, b_p50 = a.latency.p50_ms, b.latency.p50_ms
        added = a_p50 - b_p50 if a_p50 is not None and b_p50 is not None else None
        first = ratio(b.first_delta.p50_ms, a.first_delta.p50_ms) if a.first_delta else None
        added_first = None
        if a.first_delta and b.first_delta and a.first_delta.p50_ms and b.first_delta.p50_ms:
            added_first = a.first_delta.p50_ms - b.first_delta.p50_ms
        b_over_a = ratio(b_p50, a_p50)
        out.append(
            Comparison(
                name, a_p50, b_p50, b_over_a, added, ratio(b_rate, a_rate), first, added_first
            )
        )
    return out


def fmt(value: float | None, digits: int = 1, unit: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def show(title: str, header: list[str], rows: list[list[str]], text_columns: int = 1) -> None:
    """A table on stdout: rich's when installed, else aligned plain text."""
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        print(f"\n{title}")
        for row in [header, *rows]:
            cells = enumerate(zip(row, widths, strict=True))
            line = [c.ljust(w) if i < text_columns else c.rjust(w) for i, (c, w) in cells]
            print("  ".join(line).rstrip())
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i < text_columns else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console = Console()
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    if natural > console.width:  # never fold or cut a figure: a narrow terminal wraps the line
        console = Console(width=natural)
    console.print(table)


def show_files(results: list[FileResult], targets: list[Target], opts: Options) -> None:
    both = len(targets) > 1
    header = ["target"] * both + ["file", "audio s", "runs", "mean ± sd ms", "p50 ms", "p95 ms"]
    header += ["x real time", "errors"]
    header += ["first delta p50 ms", "done p50 ms"] * opts.stream
    rows = []
    for r in results:
        lat = r.latency
        row = [r.target] * both + [r.file, fmt(r.audio_seconds, 2), str(r.runs)]
        row += [f"{fmt(lat.mean_ms)} ± {fmt(lat.stdev_ms)}", fmt(lat.p50_ms), fmt(lat.p95_ms)]
        row += [fmt(r.x_real_time, 1, "x"), str(r.errors)]
        if r.first_delta and r.done:
            row += [fmt(r.first_delta.p50_ms), fmt(r.done.p50_ms)]
        rows.append(row)
    title = f"Latency, one request at a time: a warm-up, then {opts.runs} measured"
    show(title, header, rows, 1 + both)


def show_levels(results: list[LevelResult], targets: list[Target], opts: Options) -> None:
    both = len(targets) > 1
    header = ["target"] * both + ["concurrency", "requests", "errors", "requests/s"]
    header += ["audio s/s", "p50 ms", "p95 ms"] + ["first delta p50 ms"] * opts.stream
    rows = []
    for r in results:
        row = [r.target] * both + [str(r.concurrency), str(r.requests), str(r.errors)]
        row += [fmt(r.requests_per_s, 2), fmt(r.audio_seconds_per_s, 1)]
        row += [fmt(r.latency.p50_ms), fmt(r.latency.p95_ms)]
        row += [fmt(r.first_delta.p50_ms)] if r.first_delta else []
        rows.append(row)
    show("Throughput by concurrency", header, rows, both)


def show_compare(comparisons: list[Comparison], targets: list[Target], opts: Options) -> None:
    header = ["workload", "A p50 ms", "B p50 ms", "p50 B/A", "added ms (A-B)", "requests/s B/A"]
    header += ["first delta B/A", "first delta added ms"] * opts.stream
    rows = []
    for c in comparisons:
        row = [c.workload, fmt(c.a_p50_ms), fmt(c.b_p50_ms), fmt(c.p50_ratio_b_over_a, 3)]
        row += [fmt(c.added_p50_ms), fmt(c.throughput_ratio_b_over_a, 3)]
        if opts.stream:
            row += [fmt(c.first_delta_ratio_b_over_a, 3), fmt(c.added_first_delta_ms)]
        rows.append(row)
    show(f"Comparison: A = {targets[0].url}, B = {targets[1].url}", header, rows)


def plot(levels: list[LevelResult], targets: list[Target], path: str) -> None:
    """p50/p95 latency against concurrency, requests/s on a second axis."""
    import matplotlib

    matplotlib.use("Agg")  # a file, no display
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(9, 5))
    rate_axis = axis.twinx()
    for i, target in enumerate(targets):
        rows = [r for r in levels if r.target == target.label]
        xs = [r.concurrency for r in rows]
        nan = float("nan")
        p50 = [nan if r.latency.p50_ms is None else r.latency.p50_ms for r in rows]
        p95 = [nan if r.latency.p95_ms is None else r.latency.p95_ms for r in rows]
        name, color = f"{target.label} {target.url}", f"C{i}"
        axis.plot(xs, p50, "o-", color=color, label=f"{name} p50")
        axis.plot(xs, p95, "o--", color=color, label=f"{name} p95")
        rate = [r.requests_per_s for r in rows]
        rate_axis.plot(xs, rate, "s:", color=color, label=f"{name} requests/s")
    axis.set_xscale("log", base=2)
    axis.set_xticks(sorted({r.concurrency for r in levels}))
    axis.set_xticklabels([str(x) for x in sorted({r.concurrency for r in levels})])
    axis.set_xlabel("concurrent requests")
    axis.set_ylabel("latency (ms)")
    rate_axis.set_ylabel("requests/s (dotted)")
    handles, labels = axis.get_legend_handles_labels()
    more_handles, more_labels = rate_axis.get_legend_handles_labels()
    axis.legend(handles + more_handles, labels + more_labels, fontsize="small", loc="upper left")
    axis.set_title("Transcription latency and throughput by concurrency")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _numbers(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers and commas, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def _levels(text: str) -> list[int]:
    values = _numbers(text)
    if not all(v.is_integer() for v in values):
        raise argparse.ArgumentTypeError(f"expected whole numbers, got {text!r}")
    return [int(v) for v in values]


def _positive(text: str) -> int:
    values = _levels(text)
    if len(values) > 1:
        raise argparse.ArgumentTypeError(f"expected one number, got {text!r}")
    return values[0]


def _seconds(text: str) -> float:
    values = _numbers(text)
    if len(values) > 1:
        raise argparse.ArgumentTypeError(f"expected one number, got {text!r}")
    return values[0]


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[Clip], list[Target]]:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("files", nargs="*", metavar="FILE", help="audio files (any format the server reads)")
    add("--url", default="http://localhost:8000", help="server A (default: %(default)s)")
    key = os.environ.get("QWEN_API_KEY")
    add("--api-key", metavar="KEY", default=key, help="A's key (env QWEN_API_KEY)")
    add("--model", metavar="ID", default="whisper-1", help="sent to A (default: %(default)s)")
    add("--language", metavar="LANG", help="an ISO code such as en (default: detected)")
    add("--runs", metavar="N", type=_positive, default=5, help="requests per file (default: 5)")
    add("--synthetic", type=_numbers, default=[], metavar="S,S", help="make WAVs of these seconds")
    add("--concurrency", type=_levels, default=[], metavar="N,N", help="throughput sweep levels")
    add("--stream", action="store_true", help="stream=true: time to first delta and to done")
    add("--compare", metavar="URL2", help="server B, run alternately with A")
    add("--compare-api-key", metavar="KEY", help="B's key")
    add("--compare-model", metavar="ID", help="sent to B (default: --model)")
    add("--json", metavar="OUT", help="write every figure and the environment as JSON")
    add("--plot", metavar="OUT.png", help="draw latency and requests/s against concurrency")
    add("--timeout", metavar="S", type=_seconds, default=600.0, help="per request (default: 600)")
    args = parser.parse_args(argv)
    if not args.files and not args.synthetic:
        parser.error("give audio files or --synthetic SECONDS")
    if args.plot and not args.concurrency:
        parser.error("--plot draws the --concurrency sweep: give --concurrency 1,4,16")
    if args.plot:
        try:
            import matplotlib  # noqa: F401  (checked now, not after minutes of requests)
        except ImportError:
            parser.error("--plot needs matplotlib: pip install matplotlib")
    for url in filter(None, (args.url, args.compare)):
        if not url.startswith(("http://", "https://")):
            parser.error(f"not an http(s) URL: {url}")
    clips = [Clip(f"synthetic-{s:g}s.wav", synthetic_wav(s), round(s * RATE) / RATE)
             for s in args.synthetic]  # fmt: skip
    if any(seconds > SHORT_CLIP_SECONDS for seconds in args.synthetic):
        print(
            f"note: synthetic clips over {SHORT_CLIP_SECONDS:g} s are tone bursts, which a "
            "server that cuts long audio at the pauses a neural VAD hears (qwen3-asr-server) "
            "mostly drops as no speech: use real recordings for long audio",
            file=sys.stderr,
        )
    for name in args.files:
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            parser.error(f"cannot read {name}: {exc.strerror}")
        seconds = audio_seconds(Path(name))
        if seconds is None:
            print(f"{PROG}: warning: cannot read the length of {name}", file=sys.stderr)
        clips.append(Clip(Path(name).name, data, seconds))
    base = args.url.rstrip("/").removesuffix("/v1")
    targets = [Target("A", base, args.api_key, args.model, "--api-key or set QWEN_API_KEY")]
    if args.compare:
        base = args.compare.rstrip("/").removesuffix("/v1")
        model = args.compare_model or args.model
        targets.append(Target("B", base, args.compare_api_key, model, "--compare-api-key"))
    return args, clips, targets


async def run(
    opts: Options, clips: list[Clip], targets: list[Target]
) -> tuple[Bench, list[FileResult], list[LevelResult]]:
    size = max(opts.levels, default=1) * len(targets)  # B's idle connections stay open
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    async with httpx.AsyncClient(timeout=opts.timeout, limits=limits) as client:
        bench = Bench(client, opts, clips, targets)
        for target in targets:
            print(f"{target.label} = {target.url}, model {target.model or '(none)'}", flush=True)
        files = await bench.latency()
        show_files(files, targets, opts)
        levels = await bench.sweep()
        if levels:
            show_levels(levels, targets, opts)
    return bench, files, levels


def main(argv: list[str] | None = None) -> int:
    args, clips, targets = parse_args(argv)
    opts = Options(args.runs, args.concurrency, args.stream, args.language, args.timeout)
    try:
        bench, files, levels = asyncio.run(run(opts, clips, targets))
    except Fatal as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    comparisons = compare(files, levels) if len(targets) > 1 else []
    if comparisons:
        show_compare(comparisons, targets, opts)
    environment = {
        "url": targets[0].url, "compare_url": args.compare and targets[1].url,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(),
        "httpx": httpx.__version__, "runs": opts.runs, "concurrency": opts.levels,
        "stream": opts.stream, "model": args.model, "language": opts.language,
        "compare_model": args.compare and targets[1].model, "timeout": opts.timeout,
    }  # fmt: skip
    report = {
        "environment": environment, "files": [asdict(r) for r in files],
        "concurrency": [asdict(r) for r in levels],
        "compare": [asdict(c) for c in comparisons],
        "requests": bench.sent, "failures": bench.failures,
    }  # fmt: skip
    try:
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        if args.plot:
            plot(levels, targets, args.plot)
    except OSError as exc:
        print(f"{PROG}: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    if bench.failures:
        print(f"{PROG}: {len(bench.failures)} of {bench.sent} requests failed, the first: "
              f"{bench.failures[0]}", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
