"""POST /v1/audio/alignments at its limits: a text longer than its recording could hold, an
upload over the size limit, a backend not ready, a request refused or failed after its audio
was decoded (its room in the audio budget and its temp file given back); and its metrics."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.model.alignment import units
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures import metrics
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness, aligned_app, ready, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import TIMESTAMP, StandInAligner

PATH = "/v1/audio/alignments"
TIMESTAMPS = TIMESTAMP * 2


def _clip(seconds: float) -> bytes:
    return encode(spoken([(seconds, True)]), 16000, "wav")


# 196.5 s in two phrases: over the aligner's 180 s, so cut at pauses into pieces of <= 30 s
LONG = encode(spoken([(0.5, False), (100.0, True), (2.0, False), (94.0, True)]), 16000, "wav")


def _words(count: int) -> str:
    return " ".join(f"w{index}" for index in range(count))


def _units(request: dict[str, object]) -> int:
    """Units the aligner was asked to time in one pass."""
    return str(request["text"]).count(TIMESTAMPS)


@pytest.fixture
def aligner() -> Iterator[tuple[StandInAligner, str]]:
    fake = StandInAligner("qwen3-forced-aligner", lost=frozenset({"zebra"}))
    server = ThreadedServer(fake.app).start()
    yield fake, server.url
    server.stop()


@pytest.fixture
async def aligned(aligner: tuple[StandInAligner, str]) -> AsyncIterator[Harness]:
    async with aligned_app(aligner[1]) as harness:
        yield harness


async def _align(harness: Harness, clip: bytes, text: str, **data: str) -> httpx.Response:
    return await harness.http.post(
        PATH, files={"file": ("a.wav", clip)}, data={"text": text, **data}
    )


async def _metric(harness: Harness, name: str, absent: float | None = None) -> float:
    return metrics.value((await harness.http.get("/metrics")).text, name, absent)


@pytest.mark.parametrize(
    ("seconds", "count", "status"),
    [(1.0, 30, 200), (1.0, 31, 400), (5.0, 50, 200), (5.0, 51, 400)],
)
async def test_a_text_with_more_words_than_its_recording_could_hold_is_refused(
    aligned: Harness,
    aligner: tuple[StandInAligner, str],
    seconds: float,
    count: int,
    status: int,
) -> None:
    # 10 words a second of audio, at least 30
    response = await _align(aligned, _clip(seconds), _words(count))
    assert response.status_code == status, response.text
    if status == 400:
        error = response.json()["error"]
        assert (error["param"], error["code"]) == ("text", "text_too_long")
        assert f"{count} words" in error["message"]
        assert aligner[0].requests == []
    else:
        assert len(response.json()["words"]) == count


async def test_a_text_over_the_character_limit_is_refused(
    aligned: Harness, aligner: tuple[StandInAligner, str]
) -> None:
    response = await _align(aligned, _clip(1.0), "a" * 300_001)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("text", "text_too_long")
    assert "300000" in error["message"]
    assert aligner[0].requests == []
    schema = (await aligned.http.get("/openapi.json")).json()["paths"][PATH]["post"]
    form = schema["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["text"]["maxLength"] == 300_000


@pytest.mark.parametrize(("letters", "status"), [(200, 200), (201, 400), (299_990, 400)])
async def test_a_word_longer_than_any_word_is_refused_and_the_server_serves_on(
    aligned: Harness, aligner: tuple[StandInAligner, str], letters: int, status: int
) -> None:
    """One word of 300,000 letters stalled the event loop for seconds, read a letter at a time."""
    word = "e-" + "a" * (letters - 1)  # punctuation inside a word does not count
    response = await _align(aligned, _clip(1.0), f"a {word} a")
    assert response.status_code == status, response.text
    if status == 400:
        error = response.json()["error"]
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            "text",
            "word_too_long",
        )
        assert f"{letters} letters at character 2" in error["message"]
        assert aligner[0].requests == []
    else:
        assert [word["word"] for word in response.json()["words"]][1] == word.replace("-", "")
    assert (await aligned.http.get("/livez")).status_code == 200


async def test_no_piece_of_a_long_recording_gets_more_words_than_its_seconds_allow(
    aligned: Harness, aligner: tuple[StandInAligner, str]
) -> None:
    plain = await aligned.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", LONG)},
        data={"response_format": "verbose_json"},
    )
    pieces = plain.json()["segments"]
    # 600 words nobody heard, all at the start: the first piece's (at most 30 s: 300 words)
    text = _words(600) + " " + " ".join(piece["text"] for piece in pieces)
    response = await _align(aligned, LONG, text, response_format="verbose_json")
    assert response.status_code == 200, response.text
    body = response.json()
    sent = aligner[0].requests
    assert sum(_units(request) for request in sent) == len(body["words"]) == len(units(text, None))
    for request in sent:
        assert _units(request) <= math.ceil(10 * float(str(request["seconds"])))
    assert [word["word"] for word in body["words"][:600]] == _words(600).split()
    starts = [word["start"] for word in body["words"]]
    assert starts == sorted(starts)


async def test_a_short_alignment_needs_only_the_aligner_and_a_long_one_the_asr_model_too(
    aligner: tuple[StandInAligner, str],
) -> None:
    # the ASR model's vLLM never answers: it is "still loading" all along
    settings = Settings(
        model=MODEL, backend_url=f"http://127.0.0.1:{free_port()}", aligner_url=aligner[1]
    )
    async for harness in start_harness(settings):
        await ready(harness.app.state.asr.aligner.supervisor)
        short = await _align(harness, _clip(3.0), "Hello there, world.")
        assert short.status_code == 200, short.text
        assert [word["word"] for word in short.json()["words"]] == ["Hello", "there", "world"]
        long = await _align(harness, LONG, "Hello there, world.")
        assert long.status_code == 503, long.text
        error = long.json()["error"]
        assert error["code"] == "backend_unavailable"
        assert "speech model is still loading" in error["message"]
        assert await _metric(harness, "qwen3_asr_audio_reserved_seconds") == 0
    assert len(aligner[0].requests) == 1


async def test_an_upload_over_the_size_limit_is_the_413_transcriptions_give(
    aligner: tuple[StandInAligner, str],
) -> None:
    big = {"file": ("big.wav", b"\0" * (3 << 20))}  # over 1 MB and the form's 1 MiB beside it
    async with aligned_app(aligner[1], StandIn(MODEL), max_upload_mb=1) as harness:
        aligning = await harness.http.post(PATH, files=big, data={"text": "Hello"})
        transcribing = await harness.http.post("/v1/audio/transcriptions", files=big)
    assert aligning.status_code == transcribing.status_code == 413
    error, same = aligning.json()["error"], transcribing.json()["error"]
    assert error.pop("message").split(" (")[0] == same.pop("message").split(" (")[0]
    assert (
        error
        == same
        == {
            "type": "invalid_request_error",
            "param": "file",
            "code": "file_too_large",
        }
    )
    assert aligning.headers["connection"] == "close"
    assert aligner[0].requests == []


@pytest.fixture
def spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the form parser spools uploads past its first MiB, for this test alone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _spooled(spool: Path) -> list[str]:
    """Files in `spool`, or open there (an anonymous temp file has no name but its descriptor)."""
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            opened.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed while we looked
            continue
    return [str(path) for path in spool.iterdir()] + [
        path for path in opened if path.startswith(str(spool))
    ]


async def test_refused_and_failed_alignments_give_their_audio_and_temp_file_back(
    spool: Path,
) -> None:
    # 40 s of audio is 1.28 MB: spooled to disk, and decoded into the budget before the text is
    # found too long or the aligner answers wrongly (one row too many: a 502)
    clip = _clip(40.0)
    broken = StandInAligner("qwen3-forced-aligner", rows_off_by=1)
    server = ThreadedServer(broken.app).start()
    try:
        async with aligned_app(server.url, StandIn(MODEL)) as harness:
            too_long = await _align(harness, clip, _words(401))
            failed = await _align(harness, clip, "Hello there")
            reserved = await _metric(harness, "qwen3_asr_audio_reserved_seconds")
            left = _spooled(spool)
    finally:
        server.stop()
    assert (too_long.status_code, failed.status_code) == (400, 502)
    assert len(broken.requests) == 1
    assert reserved == 0
    assert left == []


async def test_alignments_are_counted_apart_from_transcriptions(aligned: Harness) -> None:
    assert (await _align(aligned, _clip(3.0), "Hello there world")).status_code == 200
    assert (await _align(aligned, _clip(5.0), "Hello zebra world")).status_code == 200
    assert (await _align(aligned, _clip(1.0), _words(31))).status_code == 400
    text = (await aligned.http.get("/metrics")).text
    assert metrics.value(text, "qwen3_asr_alignments_total") == 2
    assert metrics.value(text, "qwen3_asr_alignment_audio_seconds_total") == pytest.approx(8.0)
    assert metrics.value(text, "qwen3_asr_alignment_placed_count") == 2
    assert metrics.value(text, "qwen3_asr_alignment_placed_sum") == pytest.approx(1 + 0.667)
    buckets = metrics.by_label(text, "qwen3_asr_alignment_placed_bucket", "le")
    assert (buckets["0.5"], buckets["0.8"], buckets["0.99"], buckets["1.0"]) == (0, 1, 1, 2)
    assert metrics.value(text, 'qwen3_asr_transcriptions_total{protocol="http"}', absent=0) == 0


class _Deaf(StandIn):
    """A model that hears no words in any piece (music, a mumble, a language it lacks)."""

    def _raw_answer(self, body: dict[str, object], wav: object) -> str:
        return "language None<asr_text>"


async def test_a_long_recording_the_model_hears_nothing_in_is_still_aligned(
    aligner: tuple[StandInAligner, str],
) -> None:
    async with aligned_app(aligner[1], _Deaf(MODEL)) as harness:
        text = _words(400)
        response = await _align(harness, LONG, text, response_format="verbose_json")
    assert response.status_code == 200, response.text
    body = response.json()
    assert [word["word"] for word in body["words"]] == text.split()
    sent = aligner[0].requests
    assert len(sent) > 1  # shared among the pieces by their lengths, none over its room
    for request in sent:
        assert _units(request) <= math.ceil(10 * float(str(request["seconds"])))
