"""Broken, hostile and borderline uploads: a 400 that says why, or the audio that is really in
them, and never a 5xx, a hang, or memory a header asked for.

The corpus is tests/fixtures/broken_audio.py. Every upload goes to one live server, which must
answer a good request after each; a decode that hangs fails on the client's timeout.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen3_asr_server.errors import APIError
from qwen3_asr_server.speech import audio
from tests.fixtures.audio import wav
from tests.fixtures.broken_audio import JOINED_MP3, OK, Case, corpus
from tests.fixtures.containers import CONTAINERS, encode, tone
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import REPO
from tests.fixtures.standin import StandIn

CORPUS = corpus()
TIMEOUT = 10  # seconds: longer than any upload here takes to refuse or transcribe


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    server = LiveServer(StandIn(MODEL))
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        yield client
    server.stop()


def _transcribe(http: httpx.Client, data: bytes) -> httpx.Response:
    return http.post(
        "/v1/audio/transcriptions",
        files={"file": ("upload.bin", data, "application/octet-stream")},
    )


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_broken_upload_is_refused_or_transcribed(http: httpx.Client, case: Case) -> None:
    response = _transcribe(http, case.data)
    if case.expect == OK:
        assert response.status_code == 200, response.text
        assert response.json()["usage"]["seconds"] > 0
    else:
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert (error["code"], error["param"]) == (case.expect, "file"), error
    # And the server is still there for the next client.
    assert _transcribe(http, wav(0.5)).status_code == 200


def test_joined_mp3s_are_transcribed_whole(http: httpx.Client) -> None:
    """The rate and layout change where the second file starts; both parts are kept (the
    resampler used to refuse the new rate and the rest was dropped, silently)."""
    response = _transcribe(http, JOINED_MP3)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["seconds"] == pytest.approx(5.0, abs=0.2)


def test_a_concat_script_cannot_read_files_next_to_the_server(
    http: httpx.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FFmpeg's concat demuxer opens the files its script names, relative to the working
    directory when the input has no name: a client could have had the server's own audio
    transcribed. No protocol may be opened from an upload."""
    (tmp_path / "secret.wav").write_bytes(wav(1.0))
    monkeypatch.chdir(tmp_path)
    response = _transcribe(http, b"ffconcat version 1.0\nfile secret.wav\n")
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_audio"


# Peak resident memory from /proc (VmHWM): it belongs to the process's own memory map, where
# getrusage's ru_maxrss would start from the pytest process's peak, inherited through fork.
_MEASURE = """
import io, json, pathlib
from qwen3_asr_server.speech import audio
from qwen3_asr_server.errors import APIError
from tests.fixtures.broken_audio import corpus

def peak():
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

cases = corpus()
before = peak()
for case in cases:
    try:
        audio.decode(io.BytesIO(case.data), 10800)
    except APIError:
        pass
print(json.dumps(peak() - before))
"""


def test_decoding_the_corpus_takes_little_memory() -> None:
    """Peak memory, in a process of its own: what the files hold, not what headers claim.

    Before the sample-rate bounds, one 8 KB WAV "at 1 Hz" or "at 100 MHz" made FFmpeg's
    resampler take hundreds of MB.
    """
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    grown = json.loads(result.stdout.strip().splitlines()[-1])
    assert grown < 100 * (1 << 20), f"decoding the corpus grew the process by {grown >> 20} MB"


# Mutations of real files in every container: bytes overwritten with values a header field
# trips on, runs deleted, the end cut off. The decoder answers with audio or a 400, nothing else.
EXTREMES = [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x01"]
REFUSALS = ("invalid_audio", "empty_audio", "audio_too_long")
SOURCES = {container: encode(tone(1.0), 16000, container) for container in CONTAINERS}


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        # Headers are where the lengths and rates are: most writes land in the first 512 bytes.
        end = draw(st.sampled_from([512, len(data)]))
        offset = draw(st.integers(0, max(0, min(end, len(data)) - 4)))
        value = draw(st.sampled_from(EXTREMES) | st.binary(min_size=1, max_size=4))
        data[offset : offset + len(value)] = value
    if draw(st.booleans()):
        start = draw(st.integers(0, len(data)))
        del data[start : start + draw(st.integers(1, 2048))]
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@pytest.mark.parametrize("container", CONTAINERS)
@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(data=st.data())
def test_mutated_files_decode_or_are_refused(container: str, data: st.DataObject) -> None:
    upload = data.draw(mutated(SOURCES[container]))
    try:
        decoded = audio.decode(io.BytesIO(upload), max_seconds=3600)
    except APIError as error:
        refusal = (error.status, error.code, error.param)
        assert refusal in {(400, code, "file") for code in REFUSALS}, refusal
        return
    assert decoded.samples.dtype == np.int16
    assert 0 < decoded.duration <= 3600
