"""OpenAI's Files and Batches APIs, for the audio routes and chat.

Files: `POST /v1/files`, `GET /v1/files`, `GET /v1/files/{id}`, `GET /v1/files/{id}/content`
and `DELETE /v1/files/{id}`. An audio file (`user_data`) is checked to start decoding before
it is kept; a batch's input (`batch`) when its batch starts.

Batches: `POST /v1/batches`, `GET /v1/batches`, `GET /v1/batches/{id}` and
`POST /v1/batches/{id}/cancel`. The work is the runner's (`entrypoints.jobs.runner`); these
routes only write and read the store.

Each route works for the project of the key it was called with (`--keys-file`; the project
`default` on a server with one key or none): another project's files and batches answer 404
as if they did not exist, lists show the project's own, and a batch reads its project's files
only.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse
from starlette.datastructures import FormData, UploadFile

from ...errors import APIError, invalid
from ...speech import audio
from ..doors import slice_services
from ..middleware.auth import caller
from ..middleware.keys import Project
from ..protocol.body import json_body, read
from . import protocol, shapes, usage
from .files import FULL, disk_full
from .service import Jobs

router = APIRouter()
Service = Annotated[Jobs, Depends(slice_services("jobs"))]


async def _project(request: Request, jobs: Service) -> Project:
    """The project of the key the request came with: whose files and batches it sees."""
    return jobs.keys.current.project(caller(request.scope))


Owner = Annotated[Project, Depends(_project)]
PROBE_SECONDS = 2.0  # of an audio file, decoded at upload to tell it is audio
MIN_SECONDS = 0.1  # of a recording: less is no speech to transcribe (OpenAI's minimum too)


@router.post("/v1/files")
async def create_file(request: Request, jobs: Service, project: Owner) -> dict[str, Any]:
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("Send the file as multipart/form-data with a 'file' field.", "file")
    try:
        async with request.form(max_files=1, max_fields=8) as form:
            upload, asked = _read(form)
            if asked.purpose == "user_data":
                await asyncio.to_thread(_decodes, upload)
            expires = asked.expires_after.seconds if asked.expires_after else None
            name = upload.filename or "file"
            size = upload.size or 0
            row = await jobs.add_file(project, upload.file, size, name, asked.purpose, expires)
    except OSError as exc:  # the upload spooled to a full disk before it was read
        if exc.errno in FULL:
            raise disk_full() from exc
        raise
    return shapes.file_object(row)


def _read(form: FormData) -> tuple[UploadFile, protocol.FileUpload]:
    """The form's file (not empty) and its fields, checked."""
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise APIError(400, "You must provide a 'file'.", param="file", code="missing_file")
    values: dict[str, Any] = {"purpose": form.get("purpose")}
    anchor, seconds = form.get("expires_after[anchor]"), form.get("expires_after[seconds]")
    if anchor is not None or seconds is not None:
        values["expires_after"] = {"anchor": anchor, "seconds": seconds}
    asked: protocol.FileUpload = read(protocol.FileUpload, values, text=True)
    if not upload.size:
        raise APIError(400, "The 'file' is empty.", param="file", code="empty_file")
    return upload, asked


def _decodes(upload: UploadFile) -> None:
    """A 400 now for a file that is not audio, or too short to hold speech, which would fail
    every line it is named in. Its first seconds are decoded, not all of it: decoding a whole
    recording costs most of what transcribing it does (scripts/batch_throughput.py measured
    60-70%)."""
    try:
        heard = audio.decode(upload.file, PROBE_SECONDS).duration
    except APIError as exc:
        if exc.code != "audio_too_long":  # longer than the probe: it decodes
            raise
    else:
        if heard < MIN_SECONDS:
            message = (
                f"The audio is too short: it holds {heard:.3f} s of samples, and a recording "
                f"must hold at least {MIN_SECONDS:g} s."
            )
            raise invalid(message, "file", code="audio_too_short")
    upload.file.seek(0)


@router.get("/v1/files")
async def list_files(
    jobs: Service,
    project: Owner,
    purpose: str | None = None,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=shapes.PAGE)] = shapes.PAGE,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
) -> dict[str, Any]:
    return await jobs.files(project, purpose, after, limit, order == "asc")


@router.get("/v1/files/{file_id}")
async def retrieve_file(file_id: str, jobs: Service, project: Owner) -> dict[str, Any]:
    return shapes.file_object(await jobs.file(project, file_id))


@router.get("/v1/files/{file_id}/content")
async def file_content(file_id: str, jobs: Service, project: Owner) -> FileResponse:
    row = await jobs.file(project, file_id)
    kind = "application/jsonl" if row["filename"].endswith(".jsonl") else "application/octet-stream"
    return FileResponse(jobs.storage.path(file_id), media_type=kind, filename=row["filename"])


@router.delete("/v1/files/{file_id}")
async def delete_file(file_id: str, jobs: Service, project: Owner) -> dict[str, Any]:
    return await jobs.delete_file(project, file_id)


@router.post("/v1/batches")
async def create_batch(request: Request, jobs: Service, project: Owner) -> dict[str, Any]:
    key = caller(request.scope)
    body = await json_body(request)
    asked: protocol.BatchCreate = read(protocol.BatchCreate, body, text=False)
    values = asked.model_dump()
    expires = asked.output_expires_after
    values["output_expires_after"] = expires.seconds if expires else None
    return await jobs.add_batch(project, key.name if key else None, values)


@router.get("/v1/batches")
async def list_batches(
    jobs: Service,
    project: Owner,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    return await jobs.batches(project, after, limit)


@router.get("/v1/batches/{batch_id}")
async def retrieve_batch(batch_id: str, jobs: Service, project: Owner) -> dict[str, Any]:
    return await jobs.batch(project, batch_id)


@router.post("/v1/batches/{batch_id}/cancel")
async def cancel_batch(batch_id: str, jobs: Service, project: Owner) -> dict[str, Any]:
    return await jobs.cancel(project, batch_id)


@router.get("/v1/organization/usage/audio_transcriptions")
async def audio_transcriptions_usage(
    request: Request,
    jobs: Service,
    start_time: int,
    end_time: int | None = None,
    bucket_width: str = "1d",
    limit: int | None = None,
    page: str | None = None,
) -> dict[str, Any]:
    """The seconds of audio transcribed, per key, project and model: for an admin key."""
    key = caller(request.scope)
    if key is None or not key.admin:
        raise APIError(
            403,
            "You have insufficient permissions for this operation: the usage is read with an "
            "admin key (admin = true in the keys file, or --api-key).",
            code="insufficient_permissions",
        )
    query_params = request.query_params

    def listed(name: str) -> list[str]:  # as `name=a&name=b` or `name[]=a&name[]=b`
        return [*query_params.getlist(name), *query_params.getlist(f"{name}[]")]

    end = end_time if end_time is not None else int(time.time()) + 1
    query = usage.asked(start_time, end, bucket_width, limit, listed("group_by"), page)
    named = (listed("api_key_ids"), listed("project_ids"), listed("models"))
    return await jobs.usage(query, start_time, named)
