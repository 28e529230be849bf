"""One batch line run: its body read as the endpoint's own request (the form's model for the
audio routes, with `file` naming a stored file; the chat body as it is), and answered by the
same service the synchronous endpoint calls, so that a line's answer is that endpoint's."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from pydantic import ValidationError
from starlette.datastructures import Headers, UploadFile

from ...capacity.admission import Slots
from ...errors import APIError, invalid
from ...observability.metrics import Metrics
from ...transcription.service import TranscriptionService
from ..audio.protocol import AudioRequest, TranscriptionRequest, TranslationRequest
from ..chat import protocol as chat
from ..chat.service import ChatService
from ..middleware.keys import DEFAULT
from ..protocol import fields
from ..protocol.fields import Policy
from .fetch import Downloads, download
from .files import FileStorage
from .shapes import CHAT, TRANSCRIPTIONS, Row
from .store import Store


@dataclass(frozen=True)
class Services:
    """What batch lines are run with: the synchronous endpoints' own services and checks,
    the engine's admission (whose spare slots lines take) and the metrics."""

    policy: Policy
    transcription: TranscriptionService
    chat: ChatService
    admission: Slots
    metrics: Metrics
    downloads: Downloads | None  # a line's `file_url` (--batch-file-urls); None: refused


class Retry(Exception):
    """The line cannot run now (the engine is away or full): it goes back in the queue."""


async def answer(
    services: Services, store: Store, storage: FileStorage, line: Row, request_id: str
) -> tuple[int, Any]:
    """The status and answer of a claimed line (its body, with its batch's endpoint and
    project): what the endpoint answers, or its error in OpenAI's shape. A 503 or 429 (the
    engine away or full) is not an answer: `Retry`."""
    endpoint, body = line["endpoint"], line["body"]
    try:
        if endpoint == CHAT:
            return 200, await _chat(services, body, request_id)
        model = TranscriptionRequest if endpoint == TRANSCRIPTIONS else TranslationRequest
        stored = Stored(store, storage, line["project"] or DEFAULT)
        return 200, await _audio(services, stored, model, body, request_id)
    except APIError as exc:
        if exc.status in (429, 503):
            raise Retry(exc.message) from exc
        return exc.status, exc.body()


def _whole(stream: bool) -> None:
    """A line is answered whole, into the output file: a 400 for one that asks to stream."""
    if stream:
        raise invalid("A batch line does not stream; leave 'stream' out.", "stream")


async def _chat(services: Services, body: dict[str, Any], request_id: str) -> Any:
    asked = chat.read(body, services.policy).completion(body)
    _whole(asked.stream)
    return await services.chat.answer(asked, request_id)


async def _audio(
    services: Services,
    stored: Stored,
    model: type[AudioRequest],
    body: dict[str, Any],
    request_id: str,
) -> Any:
    with contextlib.ExitStack() as closing:
        if "file_url" in body:
            handle, size, name = await _downloaded(services, body["file_url"])
            closing.callback(handle.close)
            body = {key: value for key, value in body.items() if key != "file_url"}
        else:
            handle, size, name = await stored.open(body.get("file"))
            closing.callback(handle.close)
        upload = UploadFile(handle, size=size, filename=name, headers=Headers())
        try:
            asked = model.model_validate(
                {**body, "file": upload}, context={fields.POLICY: services.policy}
            )
        except ValidationError as exc:
            raise fields.api_error(exc) from None
        _whole(asked.stream)
        job = await services.transcription.accept(asked.transcription())
        try:
            return await services.transcription.transcribe(job, request_id)
        finally:
            job.release()


@dataclass(frozen=True)
class Stored:
    """The stored files a batch's lines may name: its project's."""

    store: Store
    storage: FileStorage
    project: str

    async def open(self, file_id: Any) -> tuple[BinaryIO, int, str]:
        """The stored file a line's `file` names, opened."""
        if not isinstance(file_id, str):
            message = "A line's 'file' is the id of a file uploaded with purpose user_data."
            raise invalid(message, "file", code="missing_file")
        found = await self.store.run(self.store.file, file_id, self.project)
        if found is None or found["purpose"] != "user_data":
            raise invalid(f"No such user_data file: {file_id!r}.", "file", code="file_not_found")
        return self.storage.path(file_id).open("rb"), found["bytes"], found["filename"]


async def _downloaded(services: Services, url: Any) -> tuple[BinaryIO, int, str]:
    """The file a line's `file_url` names, downloaded (when the operator allows it)."""
    if services.downloads is None:
        message = "file_url is off on this server (--batch-file-urls): upload the file instead."
        raise invalid(message, "file_url", code="file_url_not_allowed")
    if not isinstance(url, str):
        raise invalid("file_url must be a URL.", "file_url")
    handle = await download(url, services.downloads)
    size = handle.seek(0, 2)
    handle.seek(0)
    return handle, size, urlsplit(url).path.rsplit("/", 1)[-1] or "file_url"
