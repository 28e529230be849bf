#!/usr/bin/env python3
"""Does Smart Turn (`speech.turn_end`) tell a finished turn from a pause in the middle of one?

Two sources of points, each judged on the 8 s of audio before it:

- human speech: pyannote.audio's sample, a recorded telephone conversation (30 s, two
  speakers) with its speaker turns (`sample.rttm`) and sentences (`sample.stm`). "turn end": the
  end of a speaker's turn (they do not speak again within 1 s, and nobody is speaking over
  them). "pause": Silero hears 200-500 ms of silence with the same one speaker on both sides;
  the sentences say whether it falls between two of their sentences (a complete thought, not a
  turn end) or inside one (mid-thought). The audio of a turn end runs on for `--silence-ms` or
  until the next speaker starts, whichever comes first; a pause's, for `--silence-ms`.
- flite: the tests' conversation sentences in four voices (`tests/fixtures/conversations.py`):
  "complete" is a whole sentence, "cut" the same audio cut at its quietest 30 ms in the middle
  half (a gap between words), each followed by `--silence-ms` of silence.

It prints, for each comparison, how many points of each kind, the AUC (the chance that a
random positive scores above a random negative) and at threshold 0.5 the share of each kind
judged finished; then the CPU per call.

    .cache/test-venv/bin/python scripts/turn_end_quality.py
    .cache/test-venv/bin/python scripts/turn_end_quality.py --silence-ms 0 --flite 8
"""

from __future__ import annotations

import argparse
import glob
import itertools
import sys
import tempfile
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwen3_asr_server.speech.silero import WINDOW, SpeechModel  # noqa: E402
from qwen3_asr_server.speech.turn_end import SECONDS, TurnEnd  # noqa: E402
from tests.fixtures.conversations import SENTENCES, VOICES, spoken  # noqa: E402

RATE = 16_000
SAMPLE = "lib/python3*/site-packages/pyannote/audio/sample/sample.wav"
RESUMES = 1.0  # a speaker who speaks again within this many seconds has not ended the turn
PAUSES = (0.2, 0.5)  # the pauses inside a turn that are judged, in seconds
MARGIN = 0.1  # seconds: how far from a sentence's edges a pause counts as inside it
Samples = npt.NDArray[np.int16]


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    speaker: str
    text: str = ""


def read_wav(path: Path) -> Samples:
    with wave.open(str(path)) as file:
        assert (file.getframerate(), file.getnchannels()) == (RATE, 1), path
        return np.frombuffer(file.readframes(file.getnframes()), dtype=np.int16)


def read_rttm(path: Path) -> list[Segment]:
    fields = (line.split() for line in path.read_text().splitlines() if line.strip())
    return [Segment(float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in fields]


def read_stm(path: Path) -> list[Segment]:
    fields = (line.split(maxsplit=5) for line in path.read_text().splitlines() if line.strip())
    return [Segment(float(f[3]), float(f[4]), f[2], f[5]) for f in fields]


def auc(positives: list[float], negatives: list[float]) -> float:
    """The chance that a random positive scores above a random negative (ties count half)."""
    if not positives or not negatives:
        return float("nan")
    above = np.array(positives)[:, None] - np.array(negatives)[None, :]
    return float(np.mean((above > 0) + 0.5 * (above == 0)))


def turn_ends(turns: list[Segment], seconds: float) -> list[tuple[float, float]]:
    """Each turn's end and how much silence follows it (up to `seconds`): segments whose
    speaker does not speak again within RESUMES and that nobody else is speaking over."""
    found = []
    for turn in turns:
        resumes = any(
            other.speaker == turn.speaker and turn.end < other.start < turn.end + RESUMES
            for other in turns
        )
        covered = any(o.speaker != turn.speaker and o.start < turn.end < o.end for o in turns)
        if resumes or covered:
            continue
        later = [o.start for o in turns if o.start >= turn.end and o.speaker != turn.speaker]
        found.append((turn.end, min([seconds, *(start - turn.end for start in later)])))
    return found


def pauses(speech: npt.NDArray[np.bool_]) -> list[tuple[float, float]]:
    """The silences within PAUSES between two stretches of speech, in seconds."""
    edges = np.flatnonzero(np.diff(speech.astype(np.int8)))
    found = []
    for begin, end in itertools.pairwise(edges):
        if speech[begin]:  # a silence runs from window begin+1 to end
            start, length = (begin + 1) * WINDOW / RATE, (end - begin) * WINDOW / RATE
            if PAUSES[0] <= length <= PAUSES[1]:
                found.append((start, length))
    return found


def speaker_at(turns: list[Segment], at: float) -> str | None:
    """The one speaker speaking at `at`, if exactly one is."""
    speaking = {turn.speaker for turn in turns if turn.start <= at <= turn.end}
    return speaking.pop() if len(speaking) == 1 else None


def human_points(wav: Path, silence: float) -> dict[str, list[Samples]]:
    """The audio before each turn end and each pause of the conversation, by kind."""
    samples = read_wav(wav)
    turns = read_rttm(wav.with_suffix(".rttm"))
    sentences = read_stm(wav.with_suffix(".stm"))
    points: dict[str, list[Samples]] = {"turn end": [], "between sentences": [], "mid-sentence": []}
    for end, after in turn_ends(turns, silence):
        points["turn end"].append(before(samples, end + after))
    speech = SpeechModel().recording(samples) >= 0.5
    for start, length in pauses(speech):
        speaker = speaker_at(turns, start - MARGIN)
        if speaker is None or speaker != speaker_at(turns, start + length + MARGIN):
            continue
        inside = any(
            one.speaker == speaker and one.start + MARGIN < start < one.end - MARGIN
            for one in sentences
        )
        kind = "mid-sentence" if inside else "between sentences"
        points[kind].append(before(samples, start + min(silence, length)))
    return points


def before(samples: Samples, at: float) -> Samples:
    """The SECONDS of `samples` before `at` seconds."""
    end = round(at * RATE)
    return samples[max(0, end - SECONDS * RATE) : end]


def word_gap(audio: Samples) -> int | None:
    """The middle of the quietest 30 ms in the middle half of a sentence (a gap between
    words); None for a sentence under 1 s, where a cut says little."""
    frame = round(0.03 * RATE)
    loudness = np.convolve(audio.astype(np.float64) ** 2, np.ones(frame), mode="valid")
    quarter = len(loudness) // 4
    if quarter * 4 < RATE:
        return None
    return quarter + int(np.argmin(loudness[quarter : 3 * quarter])) + frame // 2


def whole_and_cut(
    sentences: list[Samples], silence: float, names: tuple[str, str]
) -> dict[str, list[Samples]]:
    """Each sentence whole and cut at a word gap, each followed by `silence` of zeros."""
    tail = np.zeros(round(silence * RATE), dtype=np.int16)
    points: dict[str, list[Samples]] = {names[0]: [], names[1]: []}
    for audio in sentences:
        points[names[0]].append(np.concatenate([audio, tail]))
        cut = word_gap(audio)
        if cut is not None:
            points[names[1]].append(np.concatenate([audio[:cut], tail]))
    return points


def human_sentences(wav: Path, silence: float) -> dict[str, list[Samples]]:
    """The 8 s before each of the conversation's sentence ends (`sample.stm`) and before a gap
    between words in its middle half, each followed by `silence` of zeros."""
    samples = read_wav(wav)
    tail = np.zeros(round(silence * RATE), dtype=np.int16)
    points: dict[str, list[Samples]] = {"sentence end": [], "mid-sentence cut": []}
    for one in read_stm(wav.with_suffix(".stm")):
        first, end = round(one.start * RATE), round(one.end * RATE)
        points["sentence end"].append(np.concatenate([before(samples, end / RATE), tail]))
        gap = word_gap(samples[first:end])
        if gap is not None:
            cut = before(samples, (first + gap) / RATE)
            points["mid-sentence cut"].append(np.concatenate([cut, tail]))
    return points


def flite_points(count: int, silence: float, folder: Path) -> dict[str, list[Samples]]:
    """`count` flite sentences (voices in turn), whole and cut in a gap between words."""
    sentences = [
        spoken(VOICES[index % len(VOICES)], SENTENCES[index % len(SENTENCES)], folder)
        for index in range(count)
    ]
    return whole_and_cut(sentences, silence, ("complete", "cut mid-sentence"))


def row(name: str, scores: dict[str, list[float]], positive: str, negatives: list[str]) -> str:
    """One comparison: counts, AUC, and the share judged finished at 0.5 of each kind."""
    pooled = [score for kind in negatives for score in scores[kind]]
    finished = " | ".join(
        f"{np.mean(np.array(scores[kind]) > 0.5):.2f}" if scores[kind] else "-"
        for kind in (positive, *negatives)
    )
    counts = " / ".join(str(len(scores[kind])) for kind in (positive, *negatives))
    return f"{name} | {counts} | {auc(scores[positive], pooled):.2f} | {finished}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=Path, help="pyannote's sample.wav (rttm, stm beside)")
    parser.add_argument("--silence-ms", type=float, default=200.0)
    parser.add_argument("--flite", type=int, default=len(SENTENCES) * 2, help="sentences")
    args = parser.parse_args()
    wav = args.sample or Path(next(iter(glob.glob(str(REPO / ".cache/pyannote" / SAMPLE))), ""))
    if not wav.is_file():
        raise SystemExit("pyannote's sample.wav not found: --sample PATH")
    silence = args.silence_ms / 1000
    model = TurnEnd()
    with tempfile.TemporaryDirectory() as folder:
        flite = flite_points(args.flite, silence, Path(folder))
    points = {**human_points(wav, silence), **human_sentences(wav, silence), **flite}
    began = time.process_time()
    scores = {kind: [model(audio) for audio in found] for kind, found in points.items()}
    calls = sum(len(found) for found in points.values())
    per_call = (time.process_time() - began) / max(calls, 1) * 1000
    print("comparison | counts | AUC | share judged finished (p > 0.5), each kind")
    print(row("human: turn end / mid-sentence pause", scores, "turn end", ["mid-sentence"]))
    print(row("human: turn end / any pause in a turn", scores, "turn end",
              ["between sentences", "mid-sentence"]))  # fmt: skip
    print(row("human: sentence end / mid-sentence cut", scores, "sentence end",
              ["mid-sentence cut"]))  # fmt: skip
    print(row("flite: complete / cut mid-sentence", scores, "complete", ["cut mid-sentence"]))
    print(f"CPU per call: {per_call:.1f} ms ({calls} calls)")


if __name__ == "__main__":
    main()
