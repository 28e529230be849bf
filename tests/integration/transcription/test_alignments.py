"""POST /v1/audio/alignments: a given text timed in its recording by the aligner's vLLM (a
stand-in of it here, which spreads the units of each pass evenly over its audio: every time
can be computed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from openai.types.audio import TranscriptionVerbose

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.transcription.subtitles import timestamp
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness, aligned_app, app_before
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import (
    StandInAligner,
    expected_words,
)

ALIGNER = "qwen3-forced-aligner"
PATH = "/v1/audio/alignments"
TEXT = "Hello there, world. It is me again."
UNITS = ["Hello", "there", "world", "It", "is", "me", "again"]
CLIP = encode(spoken([(3.0, True)]), 16000, "wav")


@pytest.fixture
def served() -> Iterator[tuple[StandInAligner, str]]:
    fake = StandInAligner(ALIGNER, lost=frozenset({"zebra"}))  # not in the audio, so to say
    server = ThreadedServer(fake.app).start()
    yield fake, server.url
    server.stop()


@pytest.fixture
def aligner(served: tuple[StandInAligner, str]) -> StandInAligner:
    return served[0]


@pytest.fixture
async def aligned(served: tuple[StandInAligner, str]) -> AsyncIterator[Harness]:
    async with aligned_app(served[1]) as harness:
        yield harness


async def _align(harness: Harness, clip: bytes = CLIP, **data: str) -> httpx.Response:
    return await harness.http.post(PATH, files={"file": ("a.wav", clip)}, data=data)


async def test_a_short_recording_is_aligned_in_one_pass_without_the_asr_model(
    aligned: Harness, aligner: StandInAligner
) -> None:
    response = await _align(aligned, text=TEXT)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "text": TEXT,
        "words": expected_words(0.0, 3.0, UNITS),
        "placed": 1.0,
    }
    [sent] = aligner.requests
    assert sent["text"] == "".join(f"{unit}<timestamp><timestamp>" for unit in UNITS)
    assert sent["seconds"] == pytest.approx(3.0)
    assert aligned.standin is not None
    assert aligned.standin.requests == []


async def test_verbose_json_is_openais_shape_with_a_segment(aligned: Harness) -> None:
    response = await _align(aligned, text=TEXT, language="en", response_format="verbose_json")
    assert response.status_code == 200, response.text
    body = response.json()
    verbose = TranscriptionVerbose.model_validate(body)
    words = expected_words(0.0, 3.0, UNITS)
    assert [word.model_dump(exclude_none=True) for word in verbose.words or []] == words
    assert (verbose.language, verbose.duration, verbose.text) == ("english", 3.0, TEXT)
    [segment] = verbose.segments or []
    assert (segment.start, segment.end, segment.text) == (0.0, words[-1]["end"], TEXT)
    assert body["placed"] == 1.0


async def test_subtitles_are_cut_at_sentence_ends(aligned: Harness) -> None:
    words = expected_words(0.0, 3.0, UNITS)
    srt = await _align(aligned, text=TEXT, response_format="srt")
    assert srt.headers["content-type"].startswith("application/x-subrip")
    assert srt.text == (
        f"1\n{timestamp(0.0, ',')} --> {timestamp(words[2]['end'], ',')}\nHello there, world.\n\n"
        f"2\n{timestamp(words[3]['start'], ',')} --> {timestamp(words[6]['end'], ',')}\n"
        "It is me again.\n\n"
    )
    vtt = await _align(aligned, text=TEXT, response_format="vtt")
    assert vtt.text.startswith("WEBVTT\n\n")
    assert "Hello there, world.\n" in vtt.text
    assert "It is me again.\n" in vtt.text


async def test_a_text_the_audio_does_not_have_still_answers_and_says_how_much_was_placed(
    aligned: Harness,
) -> None:
    response = await _align(aligned, text="Hello zebra world", response_format="verbose_json")
    assert response.status_code == 200, response.text
    body = response.json()
    assert [word["word"] for word in body["words"]] == ["Hello", "zebra", "world"]
    assert body["placed"] == pytest.approx(2 / 3, abs=0.001)
    starts = [word["start"] for word in body["words"]]
    assert starts == sorted(starts)  # the lost word's times were filled in between


async def test_a_long_recording_is_shared_among_its_pieces_by_their_transcripts(
    aligned: Harness, aligner: StandInAligner
) -> None:
    # 196.5 s in two phrases: over the aligner's 180 s, so cut at pauses (into pieces of at
    # most 30 s, as transcription cuts it), each piece transcribed ("Heard 30 s."), and the
    # given text shared among them: each piece's words aligned over the piece's audio
    clip = encode(spoken([(0.5, False), (100.0, True), (2.0, False), (94.0, True)]), 16000, "wav")
    plain = await aligned.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", clip)},
        data={"response_format": "verbose_json"},
    )
    pieces = plain.json()["segments"]
    assert len(pieces) > 6
    text = "Prologue. " + " ".join(piece["text"] for piece in pieces)  # a word none heard
    response = await _align(aligned, clip, text=text, response_format="verbose_json")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["text"] == text
    assert body["placed"] == 1.0
    assert len(body["segments"]) == len(aligner.requests) == len(pieces)
    expected = []
    for index, (piece, segment) in enumerate(zip(pieces, body["segments"], strict=True)):
        said = ("Prologue. " if index == 0 else "") + piece["text"]
        assert segment["text"] == said
        units = said.replace(".", "").split()
        seconds = piece["end"] - piece["start"]
        expected += expected_words(piece["start"], seconds, units)
    assert body["words"] == expected
    assert sorted(request["seconds"] for request in aligner.requests) == pytest.approx(
        sorted(piece["end"] - piece["start"] for piece in pieces), abs=0.001
    )


async def test_languages_outside_the_aligners_are_refused_by_name(aligned: Harness) -> None:
    response = await _align(aligned, text="สวัสดี", language="th")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("language", "unsupported_language")
    assert "Thai" in error["message"]
    assert "English" in error["message"]


@pytest.mark.parametrize(
    ("data", "param"),
    [
        ({}, "text"),
        ({"text": " .. "}, "text"),
        ({"text": TEXT, "response_format": "text"}, "response_format"),
        ({"text": TEXT, "language": "klingon"}, "language"),
    ],
)
async def test_a_wrong_field_is_a_400_naming_it(
    aligned: Harness, data: dict[str, str], param: str
) -> None:
    response = await _align(aligned, **data)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_without_an_aligner_it_is_a_400_naming_the_flag() -> None:
    async with app_before(StandIn(MODEL)) as harness:
        response = await _align(harness, text=TEXT)
    assert response.status_code == 400
    assert "--aligner" in response.json()["error"]["message"]


async def test_an_aligner_that_is_down_is_a_503() -> None:
    async with app_before(StandIn(MODEL), aligner_url=f"http://127.0.0.1:{free_port()}") as harness:
        response = await _align(harness, text=TEXT)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "backend_unavailable"


async def test_the_route_and_its_answers_are_published(aligned: Harness) -> None:
    schema = (await aligned.http.get("/openapi.json")).json()
    operation = schema["paths"][PATH]["post"]
    form = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["required"] == ["file", "text"]
    assert set(form["properties"]) == {"file", "text", "language", "response_format"}
    assert form["properties"]["response_format"]["enum"] == ["json", "verbose_json", "srt", "vtt"]
    answers = operation["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"]
    names = [answer["$ref"].rsplit("/", 1)[1] for answer in answers]
    assert names == ["Alignment", "AlignmentVerbose"]
    assert set(names) <= set(schema["components"]["schemas"])
