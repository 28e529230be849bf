"""scripts/diarization_error.py scores as NIST's DER does, and writes RTTM that scores the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.conversations import conversation
from tests.fixtures.process import REPO, import_script

script = import_script("scripts/diarization_error.py")
error_rate = script.error_rate
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


def test_rttm_keeps_the_truth_and_what_was_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--rttm: a conversation's truth and the diarizer's answer as RTTM lines (10 fields,
    NIST's), the truth's turns to the millisecond, and the TRUTH FOUND form scoring the pair
    as the table did."""
    script.table(tmp_path, [(2, 4, 7)])
    row = capsys.readouterr().out.splitlines()[-1]
    name = "flite-2spk-4turns-seed7"
    truth, found = tmp_path / f"{name}.truth.rttm", tmp_path / f"{name}.found.rttm"
    for path in (truth, found):
        for line in path.read_text().splitlines():
            fields = line.split()
            assert len(fields) == 10
            assert fields[:3] == ["SPEAKER", name, "1"]
            assert fields[5:7] == fields[8:] == ["<NA>", "<NA>"]
            assert float(fields[3]) >= 0
            assert float(fields[4]) > 0
    talk = conversation(2, 4, tmp_path, seed=7)
    expected = [(turn.start, turn.end, turn.speaker) for turn in talk.truth]
    read = script.read_rttm(truth)
    assert [speaker for *_, speaker in read] == [speaker for *_, speaker in expected]
    assert [(start, end) for start, end, _ in read] == [
        (pytest.approx(start, abs=1e-3), pytest.approx(end, abs=2e-3)) for start, end, _ in expected
    ]
    assert {speaker for *_, speaker in script.read_rttm(found)} == {"A", "B"}
    scored = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "diarization_error.py"), str(truth), str(found)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"| {float(scored.stdout):.1%} |" in row


def test_counts_diarize_each_talk_alone_and_told(capsys: pytest.CaptureFixture[str]) -> None:
    """--counts: a short three-voice talk (seed 2) where alone two voices are found; told
    three, three."""
    script.with_counts(None, [(3, 6, (2,))])
    cells = capsys.readouterr().out.splitlines()[-1].strip("|").split("|")
    assert [cell.strip() for cell in cells[:5]] == ["3", "6", "1", "0", "1"]
