"""test-asr.py --batch: a folder of recordings transcribed as one batch through OpenAI's Files
and Batch APIs, each transcript written beside its recording. A batch does not depend on the
connection, so a folder of long recordings survives a dropped client, a proxy's timeout and a
restart of the server; this module is the client side of that, kept apart from test-asr.py's
one-file modes."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

# what FFmpeg reads and people name their recordings; a folder's other files are left alone
AUDIO = frozenset({
    ".3gp", ".aac", ".aif", ".aiff", ".amr", ".flac", ".m4a", ".mka", ".mkv", ".mov", ".mp3",
    ".mp4", ".oga", ".ogg", ".opus", ".wav", ".weba", ".webm", ".wma",
})  # fmt: skip
EXTENSIONS = {"json": ".txt", "text": ".txt", "srt": ".srt", "vtt": ".vtt", "verbose_json": ".json"}
FINAL = ("completed", "failed", "expired", "cancelled")
POLL_SECONDS = 1.0
LOG_SECONDS = 5.0  # off a terminal, the most often a changed count is printed
FILE_FAULTS = (400, 413, 415)  # an upload refused for what the file is: the others go on

Explain = Callable[[httpx.Response], str]  # one line for a refused request


class Failure(Exception):
    """The batch could not be made or followed; the message is the one line to print."""


@dataclass(frozen=True)
class Job:
    """What to transcribe and how: `options` is every line's body but its `file`."""

    folder: Path
    endpoint: str
    options: dict[str, Any]
    recursive: bool = False
    wait: bool = True
    progress: bool = True


@dataclass(frozen=True)
class Upload:
    recording: Path
    file_id: str


def recordings(folder: Path, recursive: bool) -> list[Path]:
    """The folder's audio files, by extension, in name order."""
    found = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(path for path in found if path.suffix.lower() in AUDIO and path.is_file())


def destinations(recorded: list[Path], response_format: str) -> dict[Path, Path]:
    """Where each transcript goes: beside its recording, the recording's suffix replaced, or
    kept where two recordings (talk.mp3, talk.wav) would otherwise share one transcript."""
    extension = EXTENSIONS[response_format]
    shared = Counter(path.with_suffix(extension) for path in recorded)
    return {
        path: path.with_suffix(extension)
        if shared[path.with_suffix(extension)] == 1
        else path.with_name(path.name + extension)
        for path in recorded
    }


def transcript(body: Any, response_format: str) -> str:
    """A line's answer as its file holds it: a text format as the server wrote it, `json` as
    its text (what test-asr.py prints for one file), `verbose_json` pretty-printed."""
    if isinstance(body, str):
        return body
    if response_format == "json":
        return f"{body['text']}\n"
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def failure_message(line: dict[str, Any]) -> str:
    """Why an error file's line has no answer: the batch's reason, or the endpoint's error."""
    if line.get("error"):
        return str(line["error"]["message"])
    response = line["response"]
    error = response["body"].get("error") if isinstance(response["body"], dict) else None
    message = error.get("message") if isinstance(error, dict) else response["body"]
    return f"{message} (HTTP {response['status_code']})"


def progress_line(batch: dict[str, Any], width: int = 30) -> str:
    counts = batch.get("request_counts") or {}
    total, failed = int(counts.get("total", 0)), int(counts.get("failed", 0))
    done = int(counts.get("completed", 0)) + failed
    filled = width * done // max(total, 1)
    bar = "#" * filled + "." * (width - filled)
    return f"batch {batch['status']:<11} {done}/{total} [{bar}] {failed} failed"


class Progress:
    """The batch's counts on stderr: redrawn in place on a terminal; elsewhere (a log) a line
    when they change, at most every LOG_SECONDS, and the last one always."""

    def __init__(self, stream: TextIO, shown: bool) -> None:
        self.stream = stream
        self.shown = shown
        self.terminal = stream.isatty()
        self.last = ""
        self.at = float("-inf")

    def show(self, batch: dict[str, Any], final: bool = False) -> None:
        line = progress_line(batch)
        now = time.monotonic()
        if not self.shown or line == self.last:
            return
        if self.terminal:
            self.stream.write(f"\r{line}")
        elif final or now - self.at >= LOG_SECONDS:
            self.stream.write(f"{line}\n")
        else:
            return
        self.stream.flush()
        self.last, self.at = line, now

    def end(self) -> None:
        if self.terminal and self.last:
            self.stream.write("\n")
            self.last = ""


def _json(response: httpx.Response, explain: Explain) -> dict[str, Any]:
    if response.status_code >= 400:
        raise Failure(explain(response))
    answer: dict[str, Any] = response.json()
    return answer


def upload(http: httpx.Client, job: Job, found: list[Path], explain: Explain) -> dict[str, Upload]:
    """Each recording as a `user_data` file, by custom_id (its path in the folder). One the
    server refuses (audio it cannot decode, too large) is reported and left out."""
    uploads: dict[str, Upload] = {}
    for path in found:
        custom_id = path.relative_to(job.folder).as_posix()
        with path.open("rb") as audio:
            files = {"file": (path.name, audio)}
            response = http.post("/v1/files", files=files, data={"purpose": "user_data"})
        if response.status_code in FILE_FAULTS:
            print(f"test-asr: left out {custom_id}: {explain(response)}", file=sys.stderr)
            continue
        uploads[custom_id] = Upload(path, str(_json(response, explain)["id"]))
    return uploads


def create(http: httpx.Client, job: Job, uploads: dict[str, Upload], explain: Explain) -> Any:
    """The batch input (a line per recording) uploaded, and the batch made of it."""
    lines = [
        {"custom_id": custom_id, "method": "POST", "url": job.endpoint,
         "body": {**job.options, "file": made.file_id}}
        for custom_id, made in uploads.items()
    ]  # fmt: skip
    content = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    files = {"file": (f"{job.folder.resolve().name or 'batch'}.jsonl", content.encode())}
    source = _json(http.post("/v1/files", files=files, data={"purpose": "batch"}), explain)
    request = {
        "input_file_id": source["id"],
        "endpoint": job.endpoint,
        "completion_window": "24h",
        "metadata": {"folder": str(job.folder.resolve())[-512:]},
    }
    return _json(http.post("/v1/batches", json=request), explain)


def follow(http: httpx.Client, batch: dict[str, Any], progress: Progress, explain: Explain) -> Any:
    """The batch, polled until it ends. Ctrl-C cancels it on the server, says so, and goes on
    as an interrupt."""
    try:
        while batch["status"] not in FINAL:
            progress.show(batch)
            time.sleep(POLL_SECONDS)
            batch = _json(http.get(f"/v1/batches/{batch['id']}"), explain)
    except KeyboardInterrupt:
        progress.end()
        cancelled = _json(http.post(f"/v1/batches/{batch['id']}/cancel"), explain)
        print(
            f"test-asr: interrupted: batch {batch['id']} is {cancelled['status']} on the server",
            file=sys.stderr,
        )
        raise
    progress.show(batch, final=True)
    progress.end()
    return batch


def output_lines(http: httpx.Client, file_id: str | None, explain: Explain) -> Iterator[Any]:
    if file_id is None:
        return
    response = http.get(f"/v1/files/{file_id}/content")
    if response.status_code >= 400:
        raise Failure(explain(response))
    for line in response.text.splitlines():
        if line.strip():
            yield json.loads(line)


def collect(
    http: httpx.Client,
    job: Job,
    batch: dict[str, Any],
    uploads: dict[str, Upload],
    explain: Explain,
) -> int:
    """Each answered line's transcript written beside its recording (its path on stdout), each
    failed one reported on stderr; how many recordings got a transcript."""
    response_format = str(job.options["response_format"])
    places = destinations([made.recording for made in uploads.values()], response_format)
    written = 0
    for line in output_lines(http, batch.get("output_file_id"), explain):
        place = places[uploads[line["custom_id"]].recording]
        place.write_text(transcript(line["response"]["body"], response_format), newline="")
        print(place)
        written += 1
    for line in output_lines(http, batch.get("error_file_id"), explain):
        print(f"test-asr: {line['custom_id']} failed: {failure_message(line)}", file=sys.stderr)
    for error in (batch.get("errors") or {}).get("data", []):
        where = f"line {error['line']}: " if error.get("line") else ""
        print(f"test-asr: the batch failed: {where}{error['message']}", file=sys.stderr)
    return written


def forget(http: httpx.Client, file_ids: list[str]) -> None:
    """The recordings and the input deleted from the server once the batch has ended: its
    answers are on disk, and the uploads would count against the storage quota for weeks."""
    for file_id in file_ids:
        http.delete(f"/v1/files/{file_id}")


def transcribe_folder(http: httpx.Client, job: Job, explain: Explain) -> None:
    """Transcribe the folder as one batch; a Failure unless every recording got its
    transcript (after all that could be written were)."""
    found = recordings(job.folder, job.recursive)
    if not found:
        raise Failure(f"no audio files in {job.folder} (by extension: {' '.join(sorted(AUDIO))})")
    uploads = upload(http, job, found, explain)
    if not uploads:
        raise Failure(f"the server took none of the {len(found)} audio files in {job.folder}")
    batch = create(http, job, uploads, explain)
    if not job.wait:
        print(batch["id"])
    else:
        print(f"test-asr: batch {batch['id']}: {len(uploads)} recordings", file=sys.stderr)
        batch = follow(http, batch, Progress(sys.stderr, job.progress), explain)
        written = collect(http, job, batch, uploads, explain)
        forget(http, [batch["input_file_id"], *(made.file_id for made in uploads.values())])
        if written < len(uploads):
            raise Failure(
                f"{len(uploads) - written} of {len(uploads)} recordings have no transcript "
                f"(the batch is {batch['status']})"
            )
    if len(uploads) < len(found):
        raise Failure(f"{len(found) - len(uploads)} of {len(found)} recordings were left out")
