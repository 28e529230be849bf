"""The jobs' shapes, as OpenAI's API has them: a batch's input lines read and checked, its
output and error lines, and the File and Batch objects. Pure functions of rows."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

import orjson

TRANSCRIPTIONS = "/v1/audio/transcriptions"
TRANSLATIONS = "/v1/audio/translations"
CHAT = "/v1/chat/completions"
ENDPOINTS = (TRANSCRIPTIONS, TRANSLATIONS, CHAT)
MAX_LINES = 50_000  # OpenAI's limit on the requests of one batch
MAX_ERRORS = 100  # a failed batch's errors: reading stops at this many
MAX_DEPTH = 64  # a line's body nests at most this deep (Python's encoder recurses)
PAGE = 10_000  # the most objects one page of a list holds (OpenAI's default for files)
Row = dict[str, Any]


def new_id(prefix: str) -> str:
    """An id no one can guess: 128 random bits."""
    return f"{prefix}{secrets.token_hex(16)}"


def read_input(raw_lines: Iterable[bytes], endpoint: str) -> tuple[list[Row], list[Row]]:
    """The input file's lines (read one at a time: it may be large) as the queue's rows
    (`idx`, `custom_id`, `body`), or the problems that fail the batch (OpenAI's BatchError:
    code, line, message, param). Reading stops at the first line past MAX_LINES, or at the
    MAX_ERRORS-th problem. A line's body is checked when it runs: a bad body fails that line
    alone."""
    rows: list[Row] = []
    errors: list[Row] = []
    seen: set[str] = set()
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        if len(rows) + len(errors) == MAX_LINES:
            message = f"The input file has more than {MAX_LINES} requests, a batch's most."
            errors.append(batch_error("too_many_requests", number, message, None))
            break
        problem = _problem(raw, endpoint, seen)
        if problem is not None:
            errors.append(batch_error(problem[0], number, problem[1], problem[2]))
            if len(errors) == MAX_ERRORS:
                break
            continue
        line = orjson.loads(raw)
        seen.add(line["custom_id"])
        rows.append({"idx": len(rows), "custom_id": line["custom_id"], "body": line["body"]})
    if not rows and not errors:
        errors.append(batch_error("empty_file", None, "The input file has no requests.", None))
    return rows, errors


def _problem(raw: bytes, endpoint: str, seen: set[str]) -> tuple[str, str, str | None] | None:
    try:
        line = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "invalid_json", "This line is not valid JSON.", None
    if not isinstance(line, dict):
        return "invalid_request", "Each line must be a JSON object.", None
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return "missing_required_parameter", "Each line needs a 'custom_id' string.", "custom_id"
    if custom_id in seen:
        return "duplicate_custom_id", f"The custom_id {custom_id!r} is used twice.", "custom_id"
    if line.get("method") != "POST":
        return "invalid_method", "'method' must be POST.", "method"
    if line.get("url") != endpoint:
        message = f"'url' must be the batch's endpoint, {endpoint}."
        return "mismatched_url", message, "url"
    if not isinstance(line.get("body"), dict):
        return "invalid_request", "'body' must be a JSON object.", "body"
    if deeper_than(line["body"], MAX_DEPTH):
        return "invalid_request", f"'body' nests deeper than {MAX_DEPTH} levels.", "body"
    return None


def deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (the store's JSON
    encoder recurses, and fails on a line orjson parsed fine)."""
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            inner
            for outer in level
            if isinstance(outer, dict | list)
            for inner in (outer.values() if isinstance(outer, dict) else outer)
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


def batch_error(code: str, line: int | None, message: str, param: str | None) -> Row:
    """A problem that fails a batch: OpenAI's BatchError."""
    return {"code": code, "line": line, "message": message, "param": param}


def answered(line: Row, status: int, request_id: str, body: Any) -> Row:
    """A line's output: the endpoint's answer (a JSON answer as the object, text as a
    string), or its error in the endpoint's shape, with the status either had."""
    return {
        "id": new_id("batch_req_"),
        "custom_id": line["custom_id"],
        "response": {"status_code": status, "request_id": request_id, "body": body},
        "error": None,
    }


def not_run(line: Row, code: str, message: str) -> Row:
    """A line that never ran (its batch expired or was cancelled first)."""
    return {
        "id": new_id("batch_req_"),
        "custom_id": line["custom_id"],
        "response": None,
        "error": {"code": code, "message": message},
    }


def jsonl(rows: list[Row]) -> bytes:
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def file_object(row: Row) -> Row:
    """OpenAI's File object."""
    return {
        "id": row["id"],
        "object": "file",
        "bytes": row["bytes"],
        "created_at": row["created_at"],
        "expires_at": row["expires_at"],
        "filename": row["filename"],
        "purpose": row["purpose"],
        "status": "processed",
        "status_details": None,
    }


BATCH_TIMES = (
    "created_at",
    "in_progress_at",
    "expires_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
)


def batch_object(row: Row) -> Row:
    """OpenAI's Batch object."""
    errors = row["errors"]
    return {
        "id": row["id"],
        "object": "batch",
        "endpoint": row["endpoint"],
        "errors": {"object": "list", "data": errors} if errors else None,
        "input_file_id": row["input_file_id"],
        "completion_window": row["completion_window"],
        "status": row["status"],
        "output_file_id": row["output_file_id"],
        "error_file_id": row["error_file_id"],
        **{name: row[name] for name in BATCH_TIMES},
        "request_counts": row["request_counts"] or row["counts"],
        "metadata": row["metadata"],
    }


def page(objects: list[Row], limit: int) -> Row:
    """OpenAI's list: a page of `limit` objects (one more was read to tell `has_more`)."""
    data = objects[:limit]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": len(objects) > limit,
    }
