"""Requests per minute per key: the bucket's arithmetic, OpenAI's way of writing a duration,
and one bucket per key shared by every worker that maps the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3_asr_server.capacity.rates import LocalRates, SharedRates, shown, spend

NOW = 1_800_000_000.0


def test_a_bucket_holds_a_minute_of_requests_and_fills_continuously() -> None:
    tokens, verdicts = -1.0, []
    for _ in range(4):
        verdict, tokens = spend(tokens, NOW, 3, NOW)
        verdicts.append(verdict)
    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert [v.remaining for v in verdicts] == [2, 1, 0, 0]
    assert [v.limit for v in verdicts] == [3] * 4
    assert verdicts[0].reset == pytest.approx(20.0)  # one request back every 20 s
    assert verdicts[2].reset == pytest.approx(60.0)
    assert verdicts[3].retry_after == pytest.approx(20.0)
    verdict, tokens = spend(tokens, NOW, 3, NOW + 19.9)
    assert not verdict.allowed
    assert verdict.retry_after == pytest.approx(0.1)
    verdict, tokens = spend(tokens, NOW + 19.9, 3, NOW + 20.0)
    assert verdict.allowed
    verdict, _ = spend(0.0, NOW, 3, NOW + 3600)  # an idle bucket holds no more than its limit
    assert verdict.remaining == 2


@pytest.mark.parametrize(
    ("seconds", "written"),
    [(0.12, "120ms"), (1.5, "1.5s"), (20.0, "20s"), (59.9994, "59.999s"), (360, "6m0s")],
)
def test_durations_are_written_as_openai_writes_them(seconds: float, written: str) -> None:
    assert shown(seconds) == written


def test_workers_mapping_one_file_share_each_keys_bucket(tmp_path: Path) -> None:
    one, two = SharedRates(tmp_path / "rates"), SharedRates(tmp_path / "rates")
    try:
        allowed = [each.take("notes-web", 4, NOW).allowed for each in (one, two) * 3]
        assert allowed == [True, True, True, True, False, False]
        assert two.take("calls-batch", 4, NOW).remaining == 3  # a bucket of its own
        assert one.take("notes-web", 4, NOW + 15).allowed  # refilled, for both
        assert not two.take("notes-web", 4, NOW + 15).allowed
    finally:
        one.close()
        two.close()


def test_one_process_keeps_a_bucket_per_key() -> None:
    rates = LocalRates()
    assert [rates.take("a", 2, NOW).allowed for _ in range(3)] == [True, True, False]
    assert rates.take("b", 2, NOW).allowed
