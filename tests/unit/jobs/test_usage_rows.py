"""The usage table on SQLite and PostgreSQL: what processes add adds up (as the workers and
servers sharing one database do), and a query narrows it; the page made of it."""

from __future__ import annotations

from qwen3_asr_server.entrypoints.jobs import usage
from qwen3_asr_server.entrypoints.jobs.store import Store
from tests.unit.jobs.test_store import NOW, database, store

__all__ = ["database", "store"]  # the fixtures, on both databases
MINUTE = NOW - NOW % 60


def test_what_each_process_keeps_adds_up(store: Store) -> None:
    store.add_usage({(MINUTE, "notes-web", "notes"): (2.5, 1)}, "qwen3-asr")
    store.add_usage(
        {(MINUTE, "notes-web", "notes"): (1.5, 2), (MINUTE + 60, None, "wyoming"): (3.0, 1)},
        "qwen3-asr",
    )
    rows = store.usage(MINUTE, MINUTE + 120, [], [], [])
    assert [(r["api_key"], r["project"], r["seconds"], r["requests"]) for r in rows] == [
        ("notes-web", "notes", 4.0, 3),
        ("", "wyoming", 3.0, 1),
    ]
    assert store.usage(MINUTE, MINUTE + 120, [], ["wyoming"], []) == rows[1:]
    assert store.usage(MINUTE, MINUTE + 120, ["notes-web"], [], ["other"]) == []
    assert store.usage(MINUTE + 60, MINUTE + 61, [], [], []) == rows[1:]


def test_a_page_groups_each_bucket_and_counts_from_the_start_asked() -> None:
    day = 86400
    first = MINUTE - MINUTE % day
    rows = [
        {"minute": first + 60, "api_key": "a", "project": "p", "model": "m", "seconds": 1.4,
         "requests": 1},
        {"minute": first + 120, "api_key": "a", "project": "p", "model": "m", "seconds": 1.4,
         "requests": 1},
        {"minute": first + day, "api_key": "", "project": "wyoming", "model": "m",
         "seconds": 2.0, "requests": 2},
    ]  # fmt: skip
    query = usage.asked(first + 90, first + 3 * day, "1d", None, ["api_key_id"], None)
    page = usage.page(query, rows, first + 90)
    assert [bucket["start_time"] for bucket in page["data"]] == [
        first,
        first + day,
        first + 2 * day,
    ]
    assert [
        [(r["api_key_id"], r["seconds"], r["num_model_requests"]) for r in bucket["results"]]
        for bucket in page["data"]
    ] == [[("a", 1, 1)], [(None, 2, 2)], []]  # the minute before start_time left out
    assert page["has_more"] is False
