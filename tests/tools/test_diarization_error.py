"""scripts/diarization_error.py scores as NIST's DER does."""

from __future__ import annotations

import pytest

from tests.fixtures.process import import_script

error_rate = import_script("scripts/diarization_error.py").error_rate
TRUTH = [(0.0, 2.0, "ann"), (2.0, 4.0, "bob")]


def test_the_same_turns_under_other_names_are_no_error() -> None:
    assert error_rate(TRUTH, [(0.0, 2.0, "B"), (2.0, 4.0, "A")], collar=0) == 0


def test_missed_false_alarm_and_confusion_count_over_the_truths_speech() -> None:
    assert error_rate(TRUTH, [(0.0, 2.0, "A")], collar=0) == pytest.approx(0.5)  # missed
    assert error_rate(TRUTH, [*TRUTH, (5.0, 6.0, "ann")], collar=0) == pytest.approx(0.25)
    merged = [(0.0, 4.0, "A")]  # one speaker for both: bob's half confused
    assert error_rate(TRUTH, merged, collar=0) == pytest.approx(0.5)


def test_the_collar_forgives_the_edges() -> None:
    late = [(0.2, 2.2, "A"), (2.2, 4.0, "B")]
    assert error_rate(TRUTH, late, collar=0) == pytest.approx(0.1)
    assert error_rate(TRUTH, late, collar=0.25) == 0


def test_overlapped_speech_counts_once_per_voice() -> None:
    truth = [(0.0, 2.0, "ann"), (1.0, 3.0, "bob")]
    one_at_a_time = [(0.0, 1.5, "A"), (1.5, 3.0, "B")]
    assert error_rate(truth, one_at_a_time, collar=0) == pytest.approx(1 / 4)
