"""`min_speakers` / `max_speakers` as the core gets them: from a form's text, and from a batch
line's JSON (which is validated as the same model)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import FormData

from qwen3_asr_server.entrypoints.audio import protocol as form
from qwen3_asr_server.entrypoints.audio.protocol import TranscriptionRequest
from qwen3_asr_server.entrypoints.protocol import fields
from qwen3_asr_server.entrypoints.protocol.fields import Policy
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.model.catalog import DIARIZE, Catalog
from qwen3_asr_server.speakers.count import MOST_SPEAKERS, SpeakerCount
from tests.unit.protocol.test_form import upload

POLICY = Policy(Catalog("qwen3-asr", [], 0, diarizes=True), 400, 1000)


@pytest.mark.parametrize(
    ("items", "count"),
    [
        ((), None),
        ((("max_speakers", "2"),), SpeakerCount(1, 2)),
        ((("min_speakers", "3"),), SpeakerCount(3, MOST_SPEAKERS)),
        ((("min_speakers", "2"), ("max_speakers", "2")), SpeakerCount(2, 2)),
    ],
)
def test_a_forms_count_reaches_the_core(
    items: tuple[tuple[str, str], ...], count: SpeakerCount | None
) -> None:
    given = FormData([("file", upload()), ("model", DIARIZE), *items])
    assert form.read(given, TranscriptionRequest, POLICY).transcription().speakers == count


def line(**body: Any) -> TranscriptionRequest:
    """A batch line's body, validated as the jobs runner does (JSON: no text context)."""
    context = {fields.POLICY: POLICY}
    return TranscriptionRequest.model_validate(
        {"file": upload(), "model": DIARIZE, **body}, context=context
    )


def test_a_batch_lines_count_is_a_json_number() -> None:
    assert line(min_speakers=2, max_speakers=4).transcription().speakers == SpeakerCount(2, 4)
    with pytest.raises(APIError) as caught:
        line(min_speakers=5, max_speakers=4)
    assert caught.value.param == "min_speakers"
