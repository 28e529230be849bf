"""timestamp_granularities[]=word: transcripts aligned by the aligner's vLLM (a stand-in of it
here, which spreads each piece's words evenly over the piece: every time can be computed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.transcription.subtitles import timestamp
from tests.fixtures.containers import encode
from tests.fixtures.harness import MODEL, Harness, aligned_app, app_before
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn
from tests.fixtures.standin_aligner import (
    SEGMENT_TIME,
    StandInAligner,
    expected_bins,
    expected_words,
)

ALIGNER = "qwen3-forced-aligner"
WORD_AND_SEGMENT = {
    "response_format": "verbose_json",
    "timestamp_granularities[]": ["word", "segment"],
}


@pytest.fixture
def aligner() -> Iterator[tuple[StandInAligner, str]]:
    fake = StandInAligner(ALIGNER)
    server = ThreadedServer(fake.app).start()
    yield fake, server.url
    server.stop()


@pytest.fixture
async def aligned(aligner: tuple[StandInAligner, str]) -> AsyncIterator[Harness]:
    async with aligned_app(aligner[1]) as harness:
        yield harness


async def test_words_are_timed_by_the_aligner_within_each_segment(
    aligned: Harness, aligner: tuple[StandInAligner, str]
) -> None:
    # 61.5 s in three phrases: cut at the pauses into segments of at most 30 s, each aligned
    # in a pass of its own (each of its own length, so that the answers tell them apart)
    pattern = [(0.5, False), (20.0, True), (2.0, False), (19.0, True), (2.0, False), (18.0, True)]
    clip = encode(spoken(pattern), 16000, "wav")
    response = await aligned.http.post(
        "/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data=WORD_AND_SEGMENT
    )
    assert response.status_code == 200, response.text
    body = response.json()
    segments = body["segments"]
    assert len(segments) == 3
    sent = aligner[0].requests  # one per segment, in any order
    assert len(sent) == 3
    expected = []
    for segment in segments:  # "Heard 20.45 s." has the units Heard, 2045 and s
        units = segment["text"].replace(".", "").split()
        [request] = [
            r for r in sent if r["text"].startswith(f"Heard<timestamp><timestamp>{units[1]}")
        ]
        words = expected_words(segment["start"], request["seconds"], units)
        # the segment now ends with its last word, which ends on a bin (80 ms)
        assert segment["end"] == words[-1]["end"]
        assert request["seconds"] == pytest.approx(segment["end"] - segment["start"], abs=0.04)
        expected += words
    assert body["words"] == expected


async def test_only_words_leaves_the_segments_out(aligned: Harness) -> None:
    data = {"response_format": "verbose_json", "timestamp_granularities[]": "word"}
    clip = encode(spoken([(2.0, True)]), 16000, "wav")
    response = await aligned.http.post(
        "/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data=data
    )
    body = response.json()
    assert "segments" not in body
    assert [w["word"] for w in body["words"]] == ["Heard", "200", "s"]


async def test_the_sdk_gets_words_and_segments(aligned: Harness) -> None:
    clip = encode(spoken([(2.0, True)]), 16000, "wav")
    result = await aligned.sdk.audio.transcriptions.create(
        model="whisper-1",
        file=("a.wav", clip),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert result.words is not None
    assert result.segments is not None
    assert [w.word for w in result.words] == ["Heard", "200", "s"]
    assert result.words[0].start == result.segments[0].start
    assert result.words[-1].end == pytest.approx(result.segments[0].end, abs=SEGMENT_TIME)


async def test_an_aligner_that_is_down_is_a_503() -> None:
    async with app_before(StandIn(MODEL), aligner_url=f"http://127.0.0.1:{free_port()}") as harness:
        clip = encode(spoken([(1.0, True)]), 16000, "wav")
        response = await harness.http.post(
            "/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data=WORD_AND_SEGMENT
        )
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "backend_unavailable"
        # segments alone do not need it
        response = await harness.http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", clip)},
            data={"response_format": "verbose_json"},
        )
        assert response.status_code == 200


async def test_without_an_aligner_word_timestamps_are_a_400_that_says_how(
    harness: Harness,
) -> None:
    clip = encode(spoken([(1.0, True)]), 16000, "wav")
    response = await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("a.wav", clip)}, data=WORD_AND_SEGMENT
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "timestamp_granularities"
    assert "--aligner-url" in error["message"]


async def test_a_forced_language_the_aligner_does_not_know_is_a_400(aligned: Harness) -> None:
    clip = encode(spoken([(1.0, True)]), 16000, "wav")
    response = await aligned.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", clip)},
        data={**WORD_AND_SEGMENT, "language": "nl"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("timestamp_granularities", "unsupported_language")
    assert "Dutch" in error["message"]
    assert "English" in error["message"]
    response = await aligned.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", clip)},
        data={**WORD_AND_SEGMENT, "language": "fr"},
    )
    assert response.status_code == 200
    assert response.json()["words"]


async def test_with_an_aligner_subtitles_are_cut_at_sentence_ends_with_word_times() -> None:
    fake = StandInAligner(ALIGNER, margin=0.24)  # the words leave 240 ms of silence each side
    server = ThreadedServer(fake.app).start()
    text = "Hello there. How are you today? Fine."
    try:
        async with aligned_app(server.url, StandIn(MODEL, text=text)) as harness:
            clip = encode(spoken([(3.0, True)]), 16000, "wav")
            answers = {}
            for response_format in ("srt", "vtt", "verbose_json"):
                response = await harness.http.post(
                    "/v1/audio/transcriptions",
                    files={"file": ("a.wav", clip)},
                    data={"response_format": response_format},
                )
                assert response.status_code == 200, response.text
                answers[response_format] = response
    finally:
        server.stop()
    # aligned once for each subtitle format; verbose_json without words is not aligned
    srt_request, vtt_request = fake.requests
    [segment] = answers["verbose_json"].json()["segments"]
    assert srt_request["seconds"] == vtt_request["seconds"]
    bins = expected_bins(srt_request["seconds"], 7, margin=0.24)
    times = [round(segment["start"] + b * SEGMENT_TIME, 3) for b in bins]
    # units: Hello there | How are you today | Fine: cues end at each sentence's last word
    cues = [(times[0], times[3], "Hello there."), (times[4], times[11], "How are you today?")]
    cues.append((times[12], times[13], "Fine."))
    assert answers["srt"].text == "".join(
        f"{n}\n{timestamp(a, ',')} --> {timestamp(b, ',')}\n{words}\n\n"
        for n, (a, b, words) in enumerate(cues, start=1)
    )
    assert answers["vtt"].text == "WEBVTT\n\n" + "".join(
        f"{timestamp(a, '.')} --> {timestamp(b, '.')}\n{words}\n\n" for a, b, words in cues
    )
    assert times[0] > segment["start"]  # word-timed: the silence before the first word is out


async def test_subtitles_in_a_language_the_aligner_does_not_know_keep_segment_cues(
    aligned: Harness, aligner: tuple[StandInAligner, str]
) -> None:
    clip = encode(spoken([(2.0, True)]), 16000, "wav")
    response = await aligned.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", clip)},
        data={"response_format": "srt", "language": "ar"},
    )
    assert response.status_code == 200, response.text
    assert response.text.startswith("1\n00:00:00,000 --> ")
    assert aligner[0].requests == []
