"""The default diarizer on real voices with exact truth (flite's CMU ARCTIC speakers): the
manual's targets, DER <= 3% at a collar of 0.25 s and every speaker count right."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3_asr_server.speakers.diarize import Diarizer, Known
from qwen3_asr_server.speakers.embedding import SpeakerModel
from qwen3_asr_server.speech import segmentation
from qwen3_asr_server.speech.onnx_models import Shared
from qwen3_asr_server.speech.silero import SpeechModel
from tests.fixtures.conversations import RATE, Conversation, conversation, spoken
from tests.fixtures.process import import_script

error_rate = import_script("scripts/diarization_error.py").error_rate


@pytest.fixture(scope="module")
def voices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("voices")


@pytest.fixture(scope="module")
def models() -> tuple[SpeechModel, Diarizer]:
    return SpeechModel(), Diarizer(Shared(SpeakerModel))


def diarized(talk: Conversation, models: tuple[SpeechModel, Diarizer], known: list[Known]) -> list:
    speech, diarizer = models
    probabilities = speech.recording(talk.samples)
    regions = diarizer.regions(talk.samples, probabilities, known)
    heard = segmentation.speech(probabilities, len(talk.samples))
    return [
        (max(region.start, run.start) / RATE, min(region.end, run.end) / RATE, region.speaker)
        for region in regions
        for run in heard
        if run.start < region.end and region.start < run.end
    ]


@pytest.mark.parametrize(
    ("speakers", "turns", "seed"), [(2, 4, 7), (2, 12, 1), (3, 16, 3), (4, 20, 5)]
)
def test_who_spoke_when(
    voices: Path, models: tuple[SpeechModel, Diarizer], speakers: int, turns: int, seed: int
) -> None:
    talk = conversation(speakers, turns, voices, seed)
    found = diarized(talk, models, [])
    truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
    assert len({label for *_, label in found}) == speakers
    assert error_rate(truth, found, collar=0.25) <= 0.03


def test_references_name_their_speakers(voices: Path, models: tuple[SpeechModel, Diarizer]) -> None:
    speech, diarizer = models
    talk = conversation(4, 16, voices, seed=11)

    def voice(name: str) -> Known:
        clip = spoken(name, "This is my voice, recorded for the meeting notes today.", voices)
        return Known(name, diarizer.voice(clip, speech.recording(clip)))

    found = diarized(talk, models, [voice("rms"), voice("kal16")])
    truth = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
    assert {label for *_, label in found} == {"rms", "kal16", "A", "B"}
    named = [
        (start, end, label if label in ("rms", "kal16") else "?") for start, end, label in found
    ]
    wanted = [(s, e, label if label in ("rms", "kal16") else "?") for s, e, label in truth]
    assert error_rate(wanted, named, collar=0.25) <= 0.03
