"""Starting and waking vLLM, in the traces: each start of a launched vLLM is a span, whose
`traceparent` vLLM gets as TRACEPARENT (its own loading spans go under it); a wake is a span,
the start it asks for under it; and a request that waited for the wake says so on its engine
span, and so does one to the aligner."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures.collector import Collector, Seen
from tests.fixtures.process import ServerProcess
from tests.integration.sleep.conftest import both_asleep, transcribe, until

START, WAKE, ENGINE = "start vLLM", "wake vLLM", "POST /v1/chat/completions"
ALIGNER_WAKE, ALIGNMENT = "wake vLLM (aligner)", "POST /pooling"


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    yield found
    found.stop()


def named(spans: list[Seen], name: str) -> list[Seen]:
    return sorted((span for span in spans if span.name == name), key=lambda span: span.start)


def test_a_wake_by_a_restart_is_a_span_with_vllms_start_under_it(
    run_server: Callable[..., ServerProcess], collector: Collector, tmp_path: Path
) -> None:
    server = run_server(
        "--idle-sleep",
        "0.5",
        "--otlp-traces-endpoint",
        collector.url,
        FAKE_VLLM_NO_SLEEP_ENDPOINTS="1",  # it sleeps by being stopped, as the CPU build does
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    until(server, "sleeping")
    answer = transcribe(server)
    assert answer.status_code == 200, answer.text

    def whole(seen: list[Seen]) -> bool:
        return len(named(seen, START)) == 2 and bool(named(seen, WAKE) and named(seen, ENGINE))

    spans = collector.wait(whole)
    first, second = named(spans, START)
    (wake,) = named(spans, WAKE)
    assert first.parent == ""  # the server's own start: a trace of its own
    assert (second.trace_id, second.parent) == (wake.trace_id, wake.span_id)
    assert wake.attributes == {"qwen3_asr.backend": "asr", "qwen3_asr.sleep_mode": False}
    assert first.attributes == second.attributes == {"qwen3_asr.backend": "asr"}
    assert wake.start <= second.start
    assert second.end <= wake.end  # the start ends once vLLM serves, the wake after
    given = [start["traceparent"].rsplit("-", 1)[0] for start in server.starts()]  # less flags
    assert given == [f"00-{span.trace_id}-{span.span_id}" for span in (first, second)]
    (engine,) = named(spans, ENGINE)
    assert engine.events == ["engine asleep: waiting for its wake", "engine awake, slot taken"]


def test_an_alignment_that_waited_for_the_aligners_wake_says_so_on_its_span(
    run_server: Callable[..., ServerProcess], collector: Collector
) -> None:
    server = run_server(
        "--aligner",
        "org/aligner",
        "--idle-sleep",
        "0.5",
        "--otlp-traces-endpoint",
        collector.url,
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    both_asleep(server)
    answer = transcribe(
        server, response_format="verbose_json", **{"timestamp_granularities[]": "word"}
    )
    assert answer.status_code == 200, answer.text
    assert [word["word"] for word in answer.json()["words"]] == ["Hello", "world"]

    spans = collector.wait(lambda seen: bool(named(seen, ALIGNER_WAKE) and named(seen, ALIGNMENT)))
    (alignment,) = named(spans, ALIGNMENT)
    (wake,) = named(spans, ALIGNER_WAKE)
    assert alignment.events == ["engine asleep: waiting for its wake"]
    assert alignment.start <= wake.start  # its wait is what asked for the wake
    assert wake.end <= alignment.end
