"""Smart Turn (`speech.turn_end`): its input computed as pipecat computes it, and its answer
a probability, on real speech. Needs the [turn] extra (pipecat-ai), which scripts/test.sh
installs into the test environment; the dependency floors' environment goes without it
(pipecat-ai's onnxruntime floor is above the server's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwen3_asr_server.errors import LaunchError
from qwen3_asr_server.speech.turn_end import SECONDS, TurnEnd, features, mel_filters, model_path
from tests.fixtures.speech import RATE, sentence

whisper = pytest.importorskip(
    "pipecat.audio.turn.smart_turn._whisper_features", reason="the [turn] extra is not installed"
)


def test_features_are_pipecats_for_short_and_long_audio() -> None:
    speech = np.concatenate([sentence(1), sentence(2), sentence(1), sentence(2)]).astype(np.float32)
    assert len(speech) > SECONDS * RATE
    for audio in (speech[: RATE * 3], speech):
        # pipecat pads short audio with silence before it and keeps the last 8 s of long audio
        heard = np.pad(audio[-SECONDS * RATE :], (max(0, SECONDS * RATE - len(audio)), 0))
        expected = whisper.compute_whisper_log_mel_features(heard)
        np.testing.assert_allclose(features(audio, mel_filters()), expected, atol=1e-5)


def test_a_finished_sentence_and_one_cut_short_get_probabilities() -> None:
    model = TurnEnd()
    whole = (sentence(1) * 32767).astype(np.int16)
    finished, cut = model(whole), model(whole[: len(whole) // 2])
    assert 0.0 <= finished <= 1.0
    assert 0.0 <= cut <= 1.0
    assert finished != cut


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="not a file"):
        model_path(tmp_path / "smart-turn.onnx")
    assert model_path().name == "smart-turn-v3.2-cpu.onnx"
