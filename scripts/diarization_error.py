"""How well the default diarizer tells who spoke when: DER on flite conversations.

    python scripts/diarization_error.py                 the table of docs/features/speakers.md
    python scripts/diarization_error.py --hours 1       one long recording: DER, CPU, memory
    python scripts/diarization_error.py --short         speaker counts of 36 short conversations
    python scripts/diarization_error.py --references    known speakers named right
    python scripts/diarization_error.py --counts        DER alone beside DER told the count
    python scripts/diarization_error.py TRUTH.rttm FOUND.rttm [--collar 0.25]
    ... --rttm DIR                                      also write each conversation's RTTM

The table builds 2-, 3- and 4-speaker conversations of Debian's flite voices with exact truth
(`tests/fixtures/conversations.py`), diarizes each in this process (one thread) and prints,
per conversation, the speakers there and found, the diarization error rate at collars of
0.25 s and 0, and the CPU seconds spent per hour of audio. `--hours` joins 4-speaker
conversations of the same four voices into one recording that long and prints the same, with
the process's peak resident memory before and after diarizing it. `--short` diarizes 36
conversations of 4-8 turns (2-4 speakers, six seeds each) and says how many speaker counts
were right, and which were not. `--references` diarizes 16 conversations (2-4 speakers, the
table's lengths and short 4-speaker ones, four seeds each) with a reference clip of all voices
but one, as `known_speaker_references[]` would give it, and says how many references named
their voice (the label found over most of that voice's speech is its name) and how many
voices without one kept a letter. `--counts` diarizes the table's conversations and the 36
short ones twice in the same run, alone and told how many spoke (`min_speakers` =
`max_speakers` = the truth), and prints, per size of conversation, the speaker counts right and
the mean DER of each. With `--rttm DIR` each conversation's truth and what the
diarizer found are written there as NIST RTTM (`NAME.truth.rttm`, `NAME.found.rttm`), which
the TRUTH FOUND form, or any other scorer (pyannote.metrics, dscore), reads.

The error rate is NIST's, on 10 ms frames: missed speech, false alarm and speaker confusion
over the truth's speech, speakers mapped one to one for the least error (Hungarian), frames
within `collar` of a true turn's start or end left out; overlapped speech counts once per
voice.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FRAME = 0.01  # seconds
CONVERSATIONS = ((2, 12, 1), (2, 16, 2), (3, 16, 3), (3, 20, 4), (4, 20, 5), (4, 24, 6))

Turns = Sequence[tuple[float, float, str]]
Samples = npt.NDArray[np.int16]


def _activity(turns: Turns, speakers: list[str], frames: int) -> np.ndarray:
    grid = np.zeros((len(speakers), frames), dtype=bool)
    for start, end, speaker in turns:
        grid[speakers.index(speaker), round(start / FRAME) : round(end / FRAME)] = True
    return grid


def error_rate(truth: Turns, found: Turns, collar: float = 0.25) -> float:
    """The diarization error rate of `found` against `truth`, each (start, end, speaker)."""
    true_speakers = sorted({speaker for _, _, speaker in truth})
    found_speakers = sorted({speaker for _, _, speaker in found})
    frames = round(max([end for _, end, _ in [*truth, *found]], default=0) / FRAME) + 1
    reference = _activity(truth, true_speakers, frames)
    hypothesis = _activity(found, found_speakers, frames)
    scored = np.ones(frames, dtype=bool)
    for start, end, _ in truth:
        for edge in (start, end):
            scored[max(0, round((edge - collar) / FRAME)) : round((edge + collar) / FRAME)] = False
    reference, hypothesis = reference[:, scored], hypothesis[:, scored]
    overlap = reference.astype(np.int64) @ hypothesis.T.astype(np.int64)
    rows, columns = linear_sum_assignment(-overlap) if overlap.size else ([], [])
    correct = int(overlap[rows, columns].sum()) if overlap.size else 0
    in_truth, in_found = reference.sum(axis=0), hypothesis.sum(axis=0)
    total = int(in_truth.sum())
    missed = int(np.maximum(in_truth - in_found, 0).sum())
    false_alarm = int(np.maximum(in_found - in_truth, 0).sum())
    confusion = int(np.minimum(in_truth, in_found).sum()) - correct
    return (missed + false_alarm + confusion) / total if total else 0.0


def rttm(name: str, turns: Turns) -> str:
    """NIST's RTTM: a SPEAKER line per turn of recording `name`, channel 1, in seconds."""
    return "".join(
        f"SPEAKER {name} 1 {start:.3f} {end - start:.3f} <NA> <NA> {speaker} <NA> <NA>\n"
        for start, end, speaker in turns
    )


def _keep(folder: Path | None, name: str, truth: Turns, found: Turns) -> None:
    """With --rttm: the truth and the diarizer's answer, for another scorer or a look."""
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.truth.rttm").write_text(rttm(name, truth))
        (folder / f"{name}.found.rttm").write_text(rttm(name, found))


def read_rttm(path: Path) -> list[tuple[float, float, str]]:
    turns = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            turns.append((start, start + duration, fields[7]))
    return turns


def _diarized(
    samples: Samples, references: Sequence[tuple[str, Samples]] = (), speakers: int | None = None
) -> tuple[list[tuple[float, float, str]], float]:
    """What the diarizer says (each region's speech, as the VAD heard it), and its CPU time;
    `references` are known speakers' names and clips, embedded as the server does; told
    `speakers`, that many speak (min_speakers = max_speakers)."""
    from qwen3_asr_server.speakers.count import SpeakerCount
    from qwen3_asr_server.speakers.diarize import Diarizer, Known
    from qwen3_asr_server.speakers.embedding import SpeakerModel
    from qwen3_asr_server.speech import segmentation
    from qwen3_asr_server.speech.onnx_models import Shared
    from qwen3_asr_server.speech.silero import SpeechModel

    speech = SpeechModel()
    diarizer = Diarizer(Shared(SpeakerModel))
    known = [Known(name, diarizer.voice(clip, speech.recording(clip))) for name, clip in references]
    probabilities = speech.recording(samples)
    started = time.process_time()
    count = None if speakers is None else SpeakerCount(speakers, speakers)
    regions = diarizer.regions(samples, probabilities, known, count)
    spent = time.process_time() - started
    heard = segmentation.speech(probabilities, len(samples))
    found = [
        (max(region.start, run.start) / 16000, min(region.end, run.end) / 16000, label)
        for region in regions
        for run in heard
        if run.start < region.end and region.start < run.end
        for label in [str(region.speaker)]
    ]
    return found, spent


def _row(
    speakers: int, turns: int, truth: Turns, found: Turns, seconds: float, spent: float
) -> str:
    return (
        f"| {speakers} | {turns} | {len({label for *_, label in found})} "
        f"| {error_rate(truth, found, 0.25):.1%} | {error_rate(truth, found, 0.0):.1%} "
        f"| {spent / seconds * 3600:.0f} |"
    )


HEADER = (
    "| speakers | turns | found | DER, collar 0.25 | DER, collar 0 | CPU s per audio hour |\n"
    "|---|---|---|---|---|---|"
)


def table(
    rttm_folder: Path | None = None,
    conversations: Sequence[tuple[int, int, int]] = CONVERSATIONS,
) -> None:
    """The speakers page's table: a row per conversation (speakers, turns, seed)."""
    from tests.fixtures.conversations import RATE, conversation

    print(HEADER)
    with tempfile.TemporaryDirectory() as folder:
        for speakers, turns, seed in conversations:
            talk = conversation(speakers, turns, Path(folder), seed)
            found, spent = _diarized(talk.samples)
            truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
            _keep(rttm_folder, _name(speakers, turns, seed), truth, found)
            print(_row(speakers, turns, truth, found, len(talk.samples) / RATE, spent))


def _name(speakers: int, turns: int, seed: int) -> str:
    return f"flite-{speakers}spk-{turns}turns-seed{seed}"


SHORT = ((2, 4), (2, 6), (2, 8), (3, 6), (3, 8), (4, 8))  # speakers, turns; seeds 0-5 of each


def short_conversations(rttm_folder: Path | None = None) -> None:
    from tests.fixtures.conversations import conversation

    wrong = []
    with tempfile.TemporaryDirectory() as folder:
        for speakers, turns in SHORT:
            for seed in range(6):
                talk = conversation(speakers, turns, Path(folder), seed)
                turns_found = _diarized(talk.samples)[0]
                truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
                _keep(rttm_folder, _name(speakers, turns, seed), truth, turns_found)
                found = len({label for *_, label in turns_found})
                if found != speakers:
                    wrong.append(f"{speakers} speakers, {turns} turns, seed {seed}: {found}")
    print(f"{6 * len(SHORT) - len(wrong)} of {6 * len(SHORT)} speaker counts right")
    print("\n".join(wrong))


REFERENCES = ((2, 12), (3, 16), (4, 20), (4, 12))  # speakers, turns; seeds 0-3 of each
# another sentence than any in the conversations, ~3 s in each voice
REFERENCE_TEXT = "This is my voice, recorded for the meeting notes today."


def _majority(truth: Turns, found: Turns) -> dict[str, str]:
    """Each true voice's label: the one found over most of its speech."""
    heard: dict[str, dict[str, float]] = {}
    for start, end, voice in truth:
        for found_start, found_end, label in found:
            shared = min(end, found_end) - max(start, found_start)
            if shared > 0:
                labels = heard.setdefault(voice, {})
                labels[label] = labels.get(label, 0.0) + shared
    return {voice: max(labels, key=labels.__getitem__) for voice, labels in heard.items()}


def named_references(rttm_folder: Path | None = None) -> None:
    """Known speakers: all voices but one (a different one each seed) get a reference clip
    named for the voice, so a voice named right is labelled with its own name. A row per
    size of conversation, then each voice labelled wrong."""
    from tests.fixtures.conversations import VOICES, conversation, spoken

    print("| speakers | turns | references named right | voices without one lettered |")
    print("|---|---|---|---|")
    wrong = []
    with tempfile.TemporaryDirectory() as folder:
        for speakers, turns in REFERENCES:
            right: Counter[bool] = Counter()  # by whether the voice had a reference
            total: Counter[bool] = Counter()
            for seed in range(4):
                talk = conversation(speakers, turns, Path(folder), seed)
                voices = VOICES[:speakers]
                known = [voice for index, voice in enumerate(voices) if index != seed % speakers]
                clips = [(voice, spoken(voice, REFERENCE_TEXT, Path(folder))) for voice in known]
                found = _diarized(talk.samples, clips)[0]
                truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
                _keep(rttm_folder, _name(speakers, turns, seed), truth, found)
                labels = _majority(truth, found)
                for voice in voices:
                    label, referenced = labels.get(voice, "nothing"), voice in known
                    total[referenced] += 1
                    if (label == voice) if referenced else (label not in known):
                        right[referenced] += 1
                    else:
                        wrong.append(
                            f"{speakers} speakers, {turns} turns, seed {seed}: "
                            f"{voice} labelled {label}"
                        )
            print(
                f"| {speakers} | {turns} | {right[True]} of {total[True]} "
                f"| {right[False]} of {total[False]} |"
            )
    print("\n".join(wrong))


def with_counts(
    rttm_folder: Path | None = None, sizes: Sequence[tuple[int, int, Sequence[int]]] = ()
) -> None:
    """A row per size of conversation (speakers, turns, seeds; by default the table's, one
    seed each, then the short ones, six seeds each): how many speaker counts were right and
    the mean DER, alone and told."""
    from tests.fixtures.conversations import conversation

    print(
        "| speakers | turns | talks | count right: alone | told | DER 0.25: alone | told "
        "| DER 0: alone | told |\n|---|---|---|---|---|---|---|---|---|"
    )
    sizes = sizes or [
        *[(speakers, turns, (seed,)) for speakers, turns, seed in CONVERSATIONS],
        *[(speakers, turns, tuple(range(6))) for speakers, turns in SHORT],
    ]
    with tempfile.TemporaryDirectory() as folder:
        for speakers, turns, seeds in sizes:
            right, rates = Counter[str](), {key: [] for key in ("alone", "told")}
            for seed in seeds:
                talk = conversation(speakers, turns, Path(folder), seed)
                truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
                for key, given in (("alone", None), ("told", speakers)):
                    found = _diarized(talk.samples, speakers=given)[0]
                    _keep(rttm_folder, f"{_name(speakers, turns, seed)}.{key}", truth, found)
                    right[key] += len({label for *_, label in found}) == speakers
                    rates[key].append(
                        (error_rate(truth, found, 0.25), error_rate(truth, found, 0.0))
                    )
            mean = {key: np.mean(np.array(values), axis=0) for key, values in rates.items()}
            print(
                f"| {speakers} | {turns} | {len(seeds)} | {right['alone']} | {right['told']} "
                f"| {mean['alone'][0]:.1%} | {mean['told'][0]:.1%} "
                f"| {mean['alone'][1]:.1%} | {mean['told'][1]:.1%} |"
            )


def long_recording(hours: float, rttm_folder: Path | None = None) -> None:
    from tests.fixtures.conversations import RATE, conversation

    parts, truth, at, seed = [], [], 0.0, 0
    with tempfile.TemporaryDirectory() as folder:
        while at < hours * 3600:
            talk = conversation(4, 24, Path(folder), seed)
            parts.append(talk.samples)
            truth += [(at + turn.start, at + turn.end, turn.speaker) for turn in talk.truth]
            at += len(talk.samples) / RATE
            seed += 1
    samples = np.concatenate(parts)
    del parts
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    found, spent = _diarized(samples)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _keep(rttm_folder, f"flite-4spk-{hours:g}h", truth, found)
    print(HEADER)
    print(_row(4, len(truth), truth, found, at, spent))
    print(
        f"{at / 3600:.2f} h of audio ({samples.nbytes / 2**20:.0f} MiB of samples); peak RSS "
        f"{before:.0f} MiB before diarizing, {after:.0f} MiB after"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("truth", nargs="?", type=Path)
    parser.add_argument("found", nargs="?", type=Path)
    parser.add_argument("--collar", type=float, default=0.25)
    parser.add_argument("--hours", type=float, help="diarize one recording this long")
    parser.add_argument("--short", action="store_true", help="speaker counts of short talks")
    parser.add_argument("--references", action="store_true", help="known speakers named right")
    parser.add_argument("--counts", action="store_true", help="DER alone and told the count")
    parser.add_argument("--rttm", type=Path, metavar="DIR", help="write each talk's RTTM here")
    args = parser.parse_args()
    if args.hours is not None:
        long_recording(args.hours, args.rttm)
        return
    if args.short:
        short_conversations(args.rttm)
        return
    if args.references:
        named_references(args.rttm)
        return
    if args.counts:
        with_counts(args.rttm)
        return
    if args.truth is None:
        table(args.rttm)
        return
    if args.found is None:
        parser.error("give both RTTM files, or none for the table")
    print(f"{error_rate(read_rttm(args.truth), read_rttm(args.found), args.collar):.4f}")


if __name__ == "__main__":
    main()
