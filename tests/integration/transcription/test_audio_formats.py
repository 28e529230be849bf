"""Real audio files in, every response format out, against both upstream styles.

The stand-in here answers "Heard 7.52 s." for a piece of 7.52 s, so each segment's text tells
which audio reached the model, and timestamps can be checked against it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import numpy as np
import openai
import pytest

from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.transcription.subtitles import timestamp
from tests.fixtures.audio import wav
from tests.fixtures.containers import CONTAINERS, encode
from tests.fixtures.harness import MODEL, Harness, app_before, start_harness
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken
from tests.fixtures.standin import StandIn

GREETING = spoken([(0.3, False), (1.5, True), (0.3, False)], rate=44100, channels=2)
# 150 s: phrases of 4-12 s between pauses of 0.5-1.5 s
_rng = np.random.default_rng(7)
MEETING_PATTERN: list[tuple[float, bool]] = []
while sum(seconds for seconds, _ in MEETING_PATTERN) < 150:
    MEETING_PATTERN += [(float(_rng.uniform(4, 12)), True), (float(_rng.uniform(0.5, 1.5)), False)]
MEETING = encode(spoken(MEETING_PATTERN), 16000, "mp3")
MEETING_SECONDS = sum(seconds for seconds, _ in MEETING_PATTERN)
HEARD = re.compile(r"Heard (\d+\.\d\d) s\.")


@pytest.fixture(params=["modern", "legacy"])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    fake = StandIn(MODEL, request.param, delay=0.02, describe=True)
    server = ThreadedServer(fake.app).start()
    try:
        async for h in start_harness(Settings(model=MODEL, backend_url=server.url), fake):
            yield h
    finally:
        server.stop()


@pytest.mark.parametrize("container", CONTAINERS)
async def test_every_container_is_decoded_by_content(harness: Harness, container: str) -> None:
    data = encode(GREETING, 44100, container)
    response = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("upload.bin", data, "application/octet-stream")},
    )
    assert response.status_code == 200, response.text
    heard = HEARD.fullmatch(response.json()["text"])
    assert heard is not None
    assert float(heard.group(1)) == pytest.approx(2.1, abs=0.25)  # codecs pad a little
    assert response.json()["usage"]["seconds"] == pytest.approx(float(heard.group(1)), abs=0.01)
    sent = harness.standin.requests[-1]["audio"]
    assert (sent["rate"], sent["channels"], sent["width"]) == (16000, 1, 2)


@pytest.mark.parametrize("container", CONTAINERS)
async def test_the_sdk_gets_every_format_for_every_container(harness, container: str) -> None:
    upload = (f"greeting.{container}", encode(GREETING, 44100, container))
    create = harness.sdk.audio.transcriptions.create
    text = (await create(model="whisper-1", file=upload)).text
    assert HEARD.fullmatch(text)
    assert await create(model="whisper-1", file=upload, response_format="text") == text + "\n"
    verbose = await create(model="whisper-1", file=upload, response_format="verbose_json")
    [segment] = verbose.segments or []
    assert HEARD.fullmatch(verbose.text)
    assert segment.text == verbose.text
    assert 0 < segment.start < 0.3 < 1.8 < segment.end < 2.1  # the speech, trimmed and padded
    srt = await create(model="whisper-1", file=upload, response_format="srt")
    timing = f"{timestamp(segment.start, ',')} --> {timestamp(segment.end, ',')}"
    assert srt == f"1\n{timing}\n{segment.text}\n\n"
    vtt = await create(model="whisper-1", file=upload, response_format="vtt")
    assert vtt == f"WEBVTT\n\n{timing.replace(',', '.')}\n{segment.text}\n\n"


async def test_short_clip_for_text_is_one_request_of_the_whole_clip(harness: Harness) -> None:
    clip = spoken([(8, True), (1, False), (8, True), (1, False), (8, True)])
    result = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("clip.webm", encode(clip, 16000, "webm"))
    )
    assert len(harness.standin.requests) == 1
    assert result.text == "Heard 26.00 s."


async def test_verbose_json_of_a_long_recording(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model="whisper-1",
        file=("meeting.mp3", MEETING),
        response_format="verbose_json",
        timestamp_granularities=["segment"],
    )
    assert result.language == "english"
    assert result.duration == pytest.approx(MEETING_SECONDS, abs=0.1)
    segments = result.segments or []
    assert len(segments) >= 5
    assert result.text == " ".join(segment.text for segment in segments)
    assert [segment.id for segment in segments] == list(range(len(segments)))
    previous_end = 0.0
    for segment in segments:
        assert previous_end <= segment.start < segment.end <= result.duration
        assert segment.end - segment.start <= 30.0
        heard = HEARD.fullmatch(segment.text)
        assert heard is not None
        # the timestamps are the positions of exactly the audio the model heard
        assert float(heard.group(1)) == pytest.approx(segment.end - segment.start, abs=0.011)
        assert segment.seek == round(segment.start * 100)
        assert segment.tokens
        assert all(isinstance(token, int) for token in segment.tokens)
        assert segment.avg_logprob < 0
        assert segment.compression_ratio > 0
        assert segment.no_speech_prob == 0.0
        assert segment.temperature == 0.0
        previous_end = segment.end
    assert harness.standin.max_in_flight > 1  # pieces went upstream concurrently
    assert all(request["logprobs"] for request in harness.standin.requests)


async def test_long_audio_as_json_is_stitched_in_order(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("meeting.mp3", MEETING)
    )
    pieces = result.text.split(" Heard ")
    assert len(pieces) == len(harness.standin.requests) > 1
    total = sum(float(HEARD.search(f"Heard {p}").group(1)) for p in pieces)  # type: ignore[union-attr]
    assert total < MEETING_SECONDS  # the pauses between the pieces were not sent
    assert not any("logprobs" in request for request in harness.standin.requests)


async def test_unspaced_languages_are_joined_without_spaces(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("meeting.mp3", MEETING), language="zh"
    )
    count = len(harness.standin.requests)
    assert count > 1
    assert result.text == "你好，世界。" * count


async def test_srt_and_vtt_cues_follow_the_pauses(harness: Harness) -> None:
    """Without an aligner every pause of 0.7 s ends a piece, as server_vad chunking with
    that silence does; a piece's text is cut into cues of at most 7 s."""
    chunked = await harness.sdk.audio.transcriptions.create(
        model=MODEL,
        file=("m.mp3", MEETING),
        response_format="verbose_json",
        chunking_strategy={
            "type": "server_vad",
            "silence_duration_ms": 700,
            "prefix_padding_ms": 150,
        },
    )
    segments = chunked.segments or []
    assert len(segments) > 1
    srt = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("m.mp3", MEETING), response_format="srt"
    )
    cues = re.findall(
        r"^(\d+)\n(\d\d:\d\d:\d\d,\d\d\d) --> (\d\d:\d\d:\d\d,\d\d\d)\n(.+?)\n\n", srt, re.M | re.S
    )
    assert [int(number) for number, *_ in cues] == list(range(1, len(cues) + 1))
    texts = [text.replace("\n", " ") for *_, text in cues]
    assert " ".join(texts) == " ".join(segment.text for segment in segments)
    times = [(_seconds(begin), _seconds(finish)) for _, begin, finish, _ in cues]
    assert {round(segment.start, 3) for segment in segments} <= {begin for begin, _ in times}
    for (begin, finish), text in zip(times, texts, strict=True):
        assert finish - begin <= 7.0 or " " not in text
    assert times == sorted(times)
    vtt = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("m.mp3", MEETING)},
        data={"response_format": "vtt"},
    )
    assert vtt.headers["content-type"] == "text/vtt; charset=utf-8"
    assert vtt.text.startswith("WEBVTT\n\n")
    assert len(re.findall(r"^\d\d:\d\d:\d\d\.\d\d\d --> ", vtt.text, re.M)) == len(cues)
    raw_srt = await harness.http.post(
        "/v1/audio/transcriptions",
        files={"file": ("m.mp3", MEETING)},
        data={"response_format": "srt"},
    )
    assert raw_srt.headers["content-type"] == "application/x-subrip; charset=utf-8"


LECTURE = (
    "So today we look at how a speech server cuts long audio into pieces, why it cuts at "
    "pauses, and what a reader of the subtitles needs, which is short cues that come and go "
    "with the voice. Nobody reads twenty seconds of text in one block"
)


async def test_subtitles_of_long_speech_with_few_pauses_stay_readable() -> None:
    """70 s of speech with two pauses: without an aligner the cues used to be one per
    piece, 20-25 s each; now none is over 7 s or two lines of 42 columns."""
    pattern = [(23.0, True), (1.0, False), (22.0, True), (1.0, False), (23.0, True)]
    talk = encode(spoken(pattern), 16000, "mp3")
    async with app_before(StandIn(MODEL, text=LECTURE)) as h:
        srt = await h.sdk.audio.transcriptions.create(
            model=MODEL, file=("talk.mp3", talk), response_format="srt"
        )
    blocks = [block.split("\n") for block in srt.strip().split("\n\n")]
    assert len(blocks) >= 3 * 4  # 22-23 s pieces: at least four cues of 7 s each
    assert [block[0] for block in blocks] == [str(n) for n in range(1, len(blocks) + 1)]
    ends = []
    for _, timing, *lines in blocks:
        begin, finish = (_seconds(stamp) for stamp in timing.split(" --> "))
        assert finish - begin <= 7.0
        assert 1 <= len(lines) <= 2
        assert all(len(line) <= 42 for line in lines)
        ends.append((begin, finish))
    assert ends == sorted(ends)
    assert ends[-1][1] == pytest.approx(70.0, abs=0.5)


def _seconds(timestamp: str) -> float:
    hours, minutes, seconds = timestamp.replace(",", ".").split(":")
    return round(int(hours) * 3600 + int(minutes) * 60 + float(seconds), 3)


async def test_silence_has_no_segments(harness: Harness) -> None:
    result = await harness.sdk.audio.transcriptions.create(
        model=MODEL, file=("quiet.wav", wav(40, silent=True)), response_format="verbose_json"
    )
    assert result.text == ""
    assert result.segments == []
    assert result.duration == 40.0
    assert harness.standin.requests == []


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK's translations
async def test_translation_verbose_json_says_translate(harness: Harness) -> None:
    result = await harness.sdk.audio.translations.create(
        model=MODEL, file=("g.ogg", encode(GREETING, 44100, "ogg")), response_format="verbose_json"
    )
    assert result.text.startswith("Heard")
    assert result.model_extra is not None
    assert result.model_extra["task"] == "translate"


def _error(response_json: dict) -> dict:
    error = response_json["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


@pytest.mark.parametrize(
    ("payload", "code", "words"),
    [
        (b"this is not audio at all" * 100, "invalid_audio", "could not be decoded"),
        (wav(0.0), "empty_audio", "no audio"),
        (encode(GREETING, 44100, "flac")[:200], "invalid_audio", "could not be decoded"),
    ],
)
async def test_undecodable_audio_is_a_400_and_the_server_keeps_serving(
    harness: Harness, payload: bytes, code: str, words: str
) -> None:
    response = await harness.http.post(
        "/v1/audio/transcriptions", files={"file": ("clip.wav", payload)}
    )
    assert response.status_code == 400
    error = _error(response.json())
    assert (error["param"], error["code"]) == ("file", code)
    assert words in error["message"]
    assert harness.standin.requests == []
    ok = await harness.http.post("/v1/audio/transcriptions", files={"file": ("a.wav", wav(1))})
    assert ok.status_code == 200


async def test_audio_over_the_length_limit_is_a_400() -> None:
    async with app_before(StandIn(MODEL), max_audio_seconds=5) as h:
        for name, data in [
            ("long.wav", wav(8)),
            ("long.webm", encode(np.tile(GREETING, (3, 1)), 44100, "webm")),  # no duration header
        ]:
            response = await h.http.post("/v1/audio/transcriptions", files={"file": (name, data)})
            assert response.status_code == 400
            assert _error(response.json())["code"] == "audio_too_long"
            assert "5 s" in _error(response.json())["message"]
        assert h.standin is not None
        assert h.standin.requests == []
        ok = await h.http.post("/v1/audio/transcriptions", files={"file": ("a.wav", wav(4))})
        assert ok.status_code == 200


async def test_upload_over_the_size_limit_is_a_413() -> None:
    async with app_before(StandIn(MODEL), max_upload_mb=1) as h:
        big = wav(40)  # 1.28 MB: over the file limit, inside the body allowance
        with pytest.raises(openai.APIStatusError) as caught:
            await h.sdk.audio.transcriptions.create(model=MODEL, file=("big.wav", big))
        assert caught.value.status_code == 413
        huge = b"\0" * (3 << 20)  # over the body limit too: refused before it is parsed
        response = await h.http.post("/v1/audio/transcriptions", files={"file": ("h.wav", huge)})
        assert response.status_code == 413
        error = _error(response.json())
        assert (error["param"], error["code"]) == ("file", "file_too_large")
        assert "1 MB" in error["message"]
        ok = await h.http.post("/v1/audio/transcriptions", files={"file": ("a.wav", wav(1))})
        assert ok.status_code == 200


def _two_hours_of_mp3() -> tuple[bytes, float]:
    """120 copies of one minute of bare MP3 frames: a valid 2-hour stream, under 25 MB."""
    rng = np.random.default_rng(3)
    pattern: list[tuple[float, bool]] = []
    while (planned := sum(seconds for seconds, _ in pattern)) < 55:
        pattern += [(float(rng.uniform(4, 12)), True), (float(rng.uniform(0.5, 1.5)), False)]
    if planned < 60:
        pattern.append((60 - planned, False))
    minute = encode(spoken(pattern), 16000, "mpeg")
    return minute * 120, 120 * sum(seconds for seconds, _ in pattern)


async def test_a_two_hour_meeting_comes_back_whole() -> None:
    data, seconds = _two_hours_of_mp3()
    assert len(data) < 25 << 20
    async with app_before(StandIn(MODEL, describe=True)) as h:
        result = await h.sdk.audio.transcriptions.create(
            model="whisper-1", file=("meeting.mp3", data), response_format="verbose_json"
        )
        segments = result.segments or []
        # each copy of bare MP3 carries its encoder delay and padding: ~0.1 s a minute
        assert result.duration == pytest.approx(seconds, abs=15)
        assert len(segments) == len(h.standin.requests) > 200  # type: ignore[union-attr]
        assert [s.start for s in segments] == sorted(s.start for s in segments)
        assert segments[-1].end > result.duration - 15
        assert result.text == " ".join(segment.text for segment in segments)
