"""`GET /v1/organization/usage/audio_transcriptions`, in OpenAI's shape: what was asked, and the
page of buckets made of the usage table's minutes. No I/O.

Buckets begin at the width's UTC boundaries (`1m`, `1h`, `1d`), from the one that holds
`start_time`; every bucket up to `end_time` is listed, an empty one with no results. A page
holds `limit` buckets, and `next_page` is where the next begins. The results of a bucket are
grouped by the fields `group_by` names (`api_key_id`, `project_id`: the names in the keys
file; `model`); one result for the whole bucket when it names none. `user_id` is accepted and
always null: this server has keys, not users.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import invalid
from .database import Row

WIDTHS = {"1m": 60, "1h": 3600, "1d": 86400}
LIMITS = {"1m": (60, 1440), "1h": (24, 168), "1d": (7, 31)}  # (default, most) buckets a page
GROUPS = {"api_key_id": "api_key", "project_id": "project", "model": "model", "user_id": None}
RESULT = "organization.usage.audio_transcriptions.result"


@dataclass(frozen=True)
class Asked:
    """A usage query, checked."""

    start: int
    end: int
    width: int
    limit: int
    group_by: tuple[str, ...]


def asked(
    start: int, end: int, width: str, limit: int | None, group_by: Sequence[str], page: str | None
) -> Asked:
    """The query, or a 400 naming the field that is wrong."""
    if width not in WIDTHS:
        raise invalid(f"bucket_width must be one of {', '.join(WIDTHS)}.", "bucket_width")
    default, most = LIMITS[width]
    limit = default if limit is None else limit
    if not 1 <= limit <= most:
        raise invalid(f"limit must be from 1 to {most} for bucket_width={width}.", "limit")
    for field in group_by:
        if field not in GROUPS:
            raise invalid(f"group_by takes {', '.join(GROUPS)}; not {field!r}.", "group_by")
    if end <= start:
        raise invalid("end_time must be after start_time.", "end_time")
    first = start - start % WIDTHS[width]
    if page is not None:
        if not page.isdigit() or int(page) < first or (int(page) - first) % WIDTHS[width]:
            raise invalid("page is not a page this query gave.", "page")
        first = int(page)
    return Asked(first, end, WIDTHS[width], limit, tuple(dict.fromkeys(group_by)))


def page(query: Asked, minutes: Sequence[Row], start: int) -> dict[str, Any]:
    """The page of buckets from `query.start`, made of `minutes` (the usage table's rows from
    `start`, the asked start_time, on)."""
    starts = range(query.start, query.end, query.width)[: query.limit + 1]
    shown = starts[: query.limit]
    buckets: dict[int, dict[tuple[Any, ...], list[float]]] = {each: {} for each in shown}
    for row in minutes:
        if row["minute"] < start:
            continue
        bucket = buckets.get(row["minute"] - (row["minute"] - query.start) % query.width)
        if bucket is None:
            continue
        group = tuple(_value(row, field) for field in query.group_by)
        total = bucket.setdefault(group, [0.0, 0])
        total[0] += row["seconds"]
        total[1] += row["requests"]
    data = [
        {
            "object": "bucket",
            "start_time": each,
            "end_time": each + query.width,
            "results": [
                _result(query.group_by, group, seconds, int(requests))
                for group, (seconds, requests) in sorted(buckets[each].items(), key=_order)
            ],
        }
        for each in shown
    ]
    more = len(starts) > query.limit
    return {
        "object": "page",
        "data": data,
        "has_more": more,
        "next_page": str(starts[-1]) if more else None,
    }


def _value(row: Row, field: str) -> Any:
    column = GROUPS[field]
    if column is None:
        return None
    return row[column] or None  # "" is no key: Wyoming's


def _order(item: tuple[tuple[Any, ...], list[float]]) -> tuple[str, ...]:
    return tuple(str(each) for each in item[0])


def _result(
    fields: Sequence[str], group: Sequence[Any], seconds: float, requests: int
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "object": RESULT,
        "seconds": round(seconds),
        "num_model_requests": requests,
        "api_key_id": None,
        "project_id": None,
        "user_id": None,
        "model": None,
    }
    result.update(zip(fields, group, strict=True))
    return result
