#!/usr/bin/env python3
"""Whether a denoiser in front of Silero VAD would earn `noise_reduction` its place.

Builds `--turns` utterances (flite's `awb` and `slt`, and the tests' two espeak-ng sentences,
`tests/fixtures/speech.py`) with pauses of 1.0-2.5 s, speech at -20 dBFS; near field as it
is, far field through a synthetic room (exponentially decaying noise, RT60 0.6 s, 3 dB more
reverberant than direct energy); then white, pink or babble noise (flite's `rms` and
`kal16` talking over each other, four streams) at each `--snr`. Each scene goes through each
denoiser and then the Realtime turns' detector (`speech.vad.SpeechDetector`, server VAD's
defaults), and its turns are matched to the turns the detector finds in the clean near-field
signal: per scene, the mean absolute error of the starts and of the ends in ms over matched
turns, and the clean turns missed and the turns found that match none (merges count as a
miss, splits as false turns). Then per denoiser: CPU ms per second of audio (all threads,
over every scene), how it is fed (a 10 ms frame stream, or the whole signal at once) and
the lag of its output measured on clean speech, and how much of the clean signal it keeps
(gain-invariant SNR of its output against its input, clean near field, and the level change).

Candidates (`--denoisers`): `noisereduce` (spectral gating, stationary and non-stationary;
whole signal: it estimates the noise from all of it), `rnnoise` (pyrnnoise's build of
RNNoise, its C library called directly through ctypes: the package's own module imports
audiolab; 48 kHz frames, resampled here with scipy), `webrtc` (webrtc-noise-gain, WebRTC's
noise suppressor at level 3 of 4, no gain), `speex` (pyspeex-noise, -30 dB, no gain). No ASR
weights are here, so what the model would make of the result is not measured. The test
extra installs webrtc-noise-gain and pyspeex-noise; `pip install noisereduce pyrnnoise` for
the other two.

    .cache/test-venv/bin/python scripts/noise_reduction.py --turns 10 --snr 10,5,0
    .cache/test-venv/bin/python scripts/noise_reduction.py --turns 3 --snr 10 --noise pink
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.speakers.features import HOP, fbank  # noqa: E402
from qwen3_asr_server.speech.silero import SpeechModel  # noqa: E402
from qwen3_asr_server.speech.vad import SpeechDetector, SpeechStarted  # noqa: E402
from tests.fixtures.conversations import SENTENCES  # noqa: E402
from tests.fixtures.conversations import spoken as flite  # noqa: E402
from tests.fixtures.speech import noise, rms, sentence  # noqa: E402

RATE = 16_000
LEVEL = 10 ** (-20 / 20)
FRAME = 160  # 10 ms: the streaming denoisers' frame
Floats = npt.NDArray[np.float64]
Turn = tuple[int, int]
Denoiser = Callable[[Floats], Floats]


@dataclass
class Scene:
    """Near-field dry speech, its far-field version, and where each utterance lies."""

    near: Floats
    far: Floats
    speech: list[Turn]
    babble: Floats = field(repr=False)


def voices(turns: int, folder: Path) -> list[Floats]:
    """`turns` utterances, alternating awb, slt and espeak-ng, as floats."""
    said: list[Floats] = []
    for index in range(turns):
        if index % 3 == 2:
            said.append(sentence(index // 3 % 2 + 1))
        else:
            voice = ("awb", "slt")[index % 3]
            text = SENTENCES[(index * 5) % len(SENTENCES)]
            said.append(flite(voice, text, folder).astype(np.float64) / 32768)
    return said


def room(seconds: float = 0.6, drr_db: float = -3.0) -> Floats:
    """A synthetic far-field impulse response: the direct path, then a decaying tail."""
    count = round(seconds * RATE)
    times = np.arange(count) / RATE
    tail = np.random.default_rng(1).standard_normal(count) * np.exp(-6.9 * times / seconds)
    tail[: round(0.003 * RATE)] = 0.0
    tail *= np.sqrt(10 ** (-drr_db / 10) / np.sum(tail**2))
    tail[0] = 1.0
    return tail


def convolve(signal: Floats, response: Floats) -> Floats:
    size = len(signal) + len(response) - 1
    spectrum = np.fft.rfft(signal, size) * np.fft.rfft(response, size)
    return np.fft.irfft(spectrum, size)[: len(signal)]


def babble(count: int, folder: Path) -> Floats:
    """Four streams of other voices (rms, kal16) talking on end to end, summed, at RMS 1."""
    mix = np.zeros(count)
    for stream in range(4):
        voice = ("rms", "kal16")[stream % 2]
        talk = np.concatenate(
            [flite(voice, text, folder) for text in np.roll(SENTENCES, 3 * stream)]
        ).astype(np.float64)
        talk = np.roll(np.resize(talk, count), stream * RATE // 3)
        mix += talk / rms(talk)
    return mix / rms(mix)


def scene(turns: int, folder: Path) -> Scene:
    rng = np.random.default_rng(0)
    parts: list[Floats] = [np.zeros(RATE)]
    speech: list[Turn] = []
    at = RATE
    for said in voices(turns, folder):
        gap = np.zeros(round(rng.uniform(1.0, 2.5) * RATE))
        parts += [said, gap]
        speech.append((at, at + len(said)))
        at += len(said) + len(gap)
    parts.append(np.zeros(RATE))
    near = np.concatenate(parts)
    far = convolve(near, room())
    spoken = np.concatenate([np.arange(start, end) for start, end in speech])
    near *= LEVEL / rms(near[spoken])
    far *= LEVEL / rms(far[spoken])
    return Scene(near, far, speech, babble(len(near), folder))


def noisy(clean: Floats, kind: str, snr: float | None, scene: Scene) -> Floats:
    if snr is None:
        return clean
    sound = scene.babble if kind == "babble" else noise(kind, len(clean), seed=2)
    return clean + sound * LEVEL * 10 ** (-snr / 20)


def pcm(signal: Floats) -> npt.NDArray[np.int16]:
    return np.clip(np.round(signal * 32768), -32768, 32767).astype(np.int16)


def framed(process: Callable[[bytes], bytes]) -> Denoiser:
    """A 10 ms-frame streaming denoiser over a whole signal (the last partial frame kept)."""

    def run(signal: Floats) -> Floats:
        samples = pcm(signal)
        out = samples.copy()
        for at in range(0, len(samples) - FRAME + 1, FRAME):
            cleaned = process(samples[at : at + FRAME].tobytes())
            out[at : at + FRAME] = np.frombuffer(cleaned, dtype=np.int16)
        return out.astype(np.float64) / 32768

    return run


def rnnoise() -> Denoiser:
    from scipy.signal import resample_poly

    spec = importlib.util.find_spec("pyrnnoise")
    assert spec is not None
    assert spec.submodule_search_locations
    lib = ctypes.CDLL(str(Path(spec.submodule_search_locations[0]) / "librnnoise.so"))
    lib.rnnoise_create.restype = ctypes.c_void_p
    lib.rnnoise_create.argtypes = [ctypes.c_void_p]
    lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_float)] * 2

    def run(signal: Floats) -> Floats:
        state = lib.rnnoise_create(None)
        high = (resample_poly(signal, 3, 1) * 32768).astype(np.float32)
        for at in range(0, len(high) - 480 + 1, 480):
            frame = np.ascontiguousarray(high[at : at + 480])
            pointer = frame.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            lib.rnnoise_process_frame(state, pointer, pointer)
            high[at : at + 480] = frame
        lib.rnnoise_destroy(ctypes.c_void_p(state))
        return np.asarray(resample_poly(high / 32768, 1, 3), dtype=np.float64)[: len(signal)]

    return run


def spectral_gate(stationary: bool) -> Denoiser:
    import noisereduce

    def run(signal: Floats) -> Floats:
        cleaned = noisereduce.reduce_noise(y=signal, sr=RATE, stationary=stationary, n_jobs=1)
        return np.asarray(cleaned, dtype=np.float64)

    return run


def webrtc() -> Denoiser:
    from webrtc_noise_gain import AudioProcessor

    def run(signal: Floats) -> Floats:
        processor = AudioProcessor(0, 3)
        return framed(lambda chunk: processor.Process10ms(chunk).audio)(signal)

    return run


def speex() -> Denoiser:
    from pyspeex_noise import AudioProcessor

    def run(signal: Floats) -> Floats:
        processor = AudioProcessor(0, -30)
        return framed(processor.process_10ms)(signal)

    return run


DENOISERS: dict[str, tuple[str, Callable[[], Denoiser]]] = {
    "none": ("-", lambda: lambda signal: signal),
    "noisereduce": ("whole signal", lambda: spectral_gate(True)),
    "noisereduce-nonstationary": ("whole signal", lambda: spectral_gate(False)),
    "rnnoise": ("10 ms frames", rnnoise),
    "webrtc": ("10 ms frames", webrtc),
    "speex": ("10 ms frames", speex),
}


def turns(model: SpeechModel, signal: Floats) -> list[Turn]:
    """The turns the Realtime detector finds, fed in 20 ms chunks as a client sends them."""
    detector = SpeechDetector(model)
    samples = pcm(signal)
    found: list[Turn] = []
    start = 0
    events = [
        e for at in range(0, len(samples), 320) for e in detector.feed(samples[at : at + 320])
    ]
    for event in [*events, *detector.flush()]:
        if isinstance(event, SpeechStarted):
            start = event.sample
        else:
            found.append((start, event.sample))
    return found


def compare(truth: list[Turn], found: list[Turn]) -> dict[str, float]:
    """Edge errors over turns matched one to one by most overlap; missed and false turns."""
    used: set[int] = set()
    starts, ends = [], []
    for start, end in truth:
        overlaps = [
            (min(end, e) - max(start, s), index)
            for index, (s, e) in enumerate(found)
            if index not in used
        ]
        best = max(overlaps, default=(0, -1))
        if best[0] > 0:
            used.add(best[1])
            starts.append(abs(found[best[1]][0] - start))
            ends.append(abs(found[best[1]][1] - end))
    return {
        "start_ms": float(np.mean(starts)) * 1000 / RATE if starts else float("nan"),
        "end_ms": float(np.mean(ends)) * 1000 / RATE if ends else float("nan"),
        "missed": len(truth) - len(starts),
        "false": len(found) - len(used),
    }


def lag(before: Floats, after: Floats, most: int = 800) -> int:
    """The delay in samples (up to 50 ms) that best lines `after` up with `before`."""
    scores = [float(np.dot(before[: len(before) - shift], after[shift:])) for shift in range(most)]
    return int(np.argmax(scores))


def aligned(after: Floats, shift: int) -> Floats:
    """`after` moved `shift` samples earlier: a denoiser's fixed delay, taken off."""
    return np.concatenate([after[shift:], np.zeros(shift)])


def kept(before: Floats, after: Floats) -> tuple[float, float]:
    """Gain-invariant SNR (dB) of `after` against `before`, and the level change (dB)."""
    scale = float(np.dot(after, before) / np.dot(before, before))
    error = after - scale * before
    snr = 10 * np.log10(np.sum((scale * before) ** 2) / max(float(np.sum(error**2)), 1e-20))
    return float(snr), 20 * float(np.log10(max(rms(after) / rms(before), 1e-10)))


def mel_distance(clean: Floats, heard: Floats, speech: list[Turn]) -> float:
    """RMS difference (dB) of the 80-bin log-mel filterbanks of `heard` and `clean` over the
    frames of speech, both floored 80 dB below the clean one's peak as Whisper-style features
    are: how far what a model hears is from the clean speech."""
    frames = np.concatenate([np.arange(s // HOP, e // HOP) for s, e in speech])[:-3]
    theirs = fbank(pcm(clean))[frames]
    floor = theirs.max() - 8 * np.log(10)
    ours, theirs = np.maximum(fbank(pcm(heard))[frames], floor), np.maximum(theirs, floor)
    return float(np.mean(np.sqrt(np.mean((ours - theirs) ** 2, axis=1)))) * 10 / np.log(10)


def cell(row: dict[str, float]) -> str:
    return (
        f"{row['start_ms']:.0f}/{row['end_ms']:.0f} {row['missed']:.0f}/{row['false']:.0f}"
        f" {row['mel_db']:.1f}"
    )


def conditions(args: argparse.Namespace) -> list[tuple[str, str, float | None]]:
    snrs = [float(each) for each in args.snr.split(",")]
    kinds = args.noise.split(",")
    listed: list[tuple[str, str, float | None]] = []
    for where in ("near", "far"):
        listed.append((where, "clean", None))
        listed += [(where, kind, snr) for kind in kinds for snr in snrs]
    return listed


def profile(scene: Scene, names: list[str]) -> dict[str, dict[str, float]]:
    """Each denoiser's delay and what it keeps of clean near-field speech."""
    print("denoiser | fed as | lag ms | clean kept: SNR dB, level dB, log-mel distance dB")
    summary = {}
    for name in names:
        after = DENOISERS[name][1]()(scene.near)
        shift = lag(scene.near, after)
        after = aligned(after, shift)
        snr, level = kept(scene.near, after)
        distance = mel_distance(scene.near, after, scene.speech)
        summary[name] = {"lag": shift, "clean_snr_db": snr, "clean_level_db": level}
        summary[name] |= {"clean_mel_db": distance}
        print(
            f"{name} | {DENOISERS[name][0]} | {shift / RATE * 1000:.1f} | "
            f"{min(snr, 99):.1f}, {level:+.1f}, {distance:.1f}"
        )
    return summary


def measure(args: argparse.Namespace, scene: Scene, names: list[str]) -> dict[str, object]:
    model = SpeechModel()
    truth = turns(model, scene.near)
    summary = profile(scene, names)
    made = {name: DENOISERS[name][1]() for name in names}
    cpu = dict.fromkeys(names, 0.0)
    rows = []
    print("\nfield | noise | SNR | " + " | ".join(names), flush=True)
    for where, kind, snr in conditions(args):
        clean = scene.near if where == "near" else scene.far
        signal = noisy(clean, kind, snr, scene)
        cells = {}
        for name in names:
            began = time.process_time()
            cleaned = made[name](signal)
            cpu[name] += time.process_time() - began
            cleaned = aligned(cleaned, int(summary[name]["lag"]))
            cells[name] = compare(truth, turns(model, cleaned))
            cells[name]["mel_db"] = mel_distance(clean, cleaned, scene.speech)
        rows.append({"field": where, "noise": kind, "snr": snr, "denoisers": cells})
        snr_text = "-" if snr is None else f"{snr:g}"
        print(f"{where} | {kind} | {snr_text} | " + " | ".join(map(cell, cells.values())))
    audio = len(scene.near) / RATE * len(rows)
    print("\ndenoiser | CPU ms per audio s")
    for name in names:
        summary[name]["cpu_ms_per_s"] = cpu[name] / audio * 1000
        print(f"{name} | {cpu[name] / audio * 1000:.2f}")
    return {"turns": len(truth), "seconds": len(scene.near) / RATE, "rows": rows} | {
        "summary": summary
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--snr", default="10,5,0", help="dB, comma-separated; clean always")
    parser.add_argument("--noise", default="white,pink,babble")
    parser.add_argument("--denoisers", default=",".join(DENOISERS))
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    names = args.denoisers.split(",")
    with tempfile.TemporaryDirectory() as folder:
        made = scene(args.turns, Path(folder))
    print(f"{args.turns} utterances, {len(made.near) / RATE:.0f} s a scene; each cell: start/end")
    print("mean absolute error (ms) / missed/false turns, against the clean near field's turns;")
    print("then the log-mel distance (dB) to the clean speech of the same field\n")
    result = measure(args, made, names)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
