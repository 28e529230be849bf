"""Qwen3-ForcedAligner served by the real vLLM CPU build, launched by `server.py --aligner`.

The server launches the tiny ASR model and the tiny scripted aligner
(tests/fixtures/tiny_aligner.py) side by side. The aligner's vLLM is asked directly too, on the
internal port the server logs, to check that the server's flags make it what word timestamps
need: a pooling runner whose STEP pooler returns one row of time-bin scores per
``<timestamp>`` token, a chat template without roles, and the rows as little-endian float16
bytes described by the ``metadata`` header. The scripted bins are exact, so every row and
every word time is checked.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from tokenizers import Tokenizer

from qwen3_asr_server.transcription.subtitles import timestamp
from tests.engine.conftest import Engine, start_engine
from tests.fixtures.speech import speech_wav
from tests.fixtures.tiny_aligner import (
    BIN_STEP,
    CLASSIFY_NUM,
    SEGMENT_TIME,
    TIMESTAMP,
    TIMESTAMP_TOKEN_ID,
    expected_bins,
    write_tiny_aligner,
)
from tests.fixtures.tiny_model import AUDIO_END, AUDIO_PAD, AUDIO_START, EXPECTED_TEXT

pytestmark = pytest.mark.engine

WORDS = ("Hello", "world", "again")
CLIP = speech_wav(3.0)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_aligner(tmp_path_factory.mktemp("aligner") / "tiny-aligner")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, checkpoint: Path) -> Iterator[Engine]:
    """server.py --cpu --aligner on the tiny checkpoints; the scripted classifier needs
    float32 (vLLM's CPU default is a 16-bit type, which it overflows)."""
    yield from start_engine(
        tmp_path_factory, "--aligner", str(checkpoint), "--aligner-vllm-args=--dtype float32"
    )


@pytest.fixture(scope="module")
def aligner_url(engine: Engine) -> str:
    """The aligner's internal address, as the server logged it when the aligner was ready."""
    found = re.search(
        r"vLLM \(aligner\) ready \(pid \d+, (http://[\d.:]+)\)", engine.server.output()
    )
    assert found, engine.server.output()[-3000:]
    return found.group(1)


def _text() -> str:
    return "".join(f"{word}{TIMESTAMP}{TIMESTAMP}" for word in WORDS)


def _messages() -> list[dict[str, object]]:
    audio = {"data": base64.b64encode(CLIP).decode(), "format": "wav"}
    text = {"type": "text", "text": _text()}
    content = [{"type": "input_audio", "input_audio": audio}, text]
    return [{"role": "user", "content": content}]


def _pooling(url: str, **fields: object) -> httpx.Response:
    """POST /pooling: the three words against the clip, as the server sends them."""
    body = {"task": "token_classify", "messages": _messages(), **fields}
    response = httpx.post(f"{url}/pooling", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response


def test_bytes_answer_gives_exact_bins(aligner_url: str) -> None:
    """One float16 row per <timestamp>; word i spans rows 2i and 2i+1."""
    response = _pooling(
        aligner_url, encoding_format="bytes", embed_dtype="float16", endianness="little"
    )
    assert response.headers["content-type"] == "application/octet-stream"
    metadata = json.loads(response.headers["metadata"])
    [item] = metadata["data"]
    assert item["shape"] == [2 * len(WORDS), CLASSIFY_NUM]
    assert (item["embed_dtype"], item["endianness"]) == ("float16", "little")
    assert item["end"] - item["start"] == 2 * len(WORDS) * CLASSIFY_NUM * 2 == len(response.content)
    rows = np.frombuffer(response.content[item["start"] : item["end"]], "<f2")
    bins = rows.reshape(item["shape"]).argmax(axis=1).tolist()
    assert bins == expected_bins(len(WORDS)) == [BIN_STEP * k for k in range(1, 7)]
    starts_ends = [bin_ * SEGMENT_TIME for bin_ in bins]  # seconds: (0.4, 0.8) for "Hello" ...
    assert starts_ends == pytest.approx([0.4, 0.8, 1.2, 1.6, 2.0, 2.4])


def test_prompt_is_audio_then_words_without_roles(checkpoint: Path, aligner_url: str) -> None:
    """The server's template, not the checkpoint's ChatML one, renders what /pooling reads."""
    tokenizer = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
    start, pad, end = (tokenizer.token_to_id(t) for t in (AUDIO_START, AUDIO_PAD, AUDIO_END))
    body = {"messages": _messages(), "add_generation_prompt": False}
    response = httpx.post(f"{aligner_url}/tokenize", json=body, timeout=60)
    assert response.status_code == 200, response.text
    tokens = response.json()["tokens"]
    audio = tokens.index(end)
    assert tokens[: audio + 1] == [start, *[pad] * (audio - 1), end]
    assert audio > 10  # the processor expanded the clip to its audio tokens
    assert tokens[audio + 1 :] == tokenizer.encode(_text()).ids
    assert tokens.count(TIMESTAMP_TOKEN_ID) == 2 * len(WORDS)
    usage = json.loads(_pooling(aligner_url, encoding_format="bytes").headers["metadata"])["usage"]
    assert usage["prompt_tokens"] == len(tokens)


def test_word_timestamps_through_the_server(engine: Engine, checkpoint: Path) -> None:
    """The tiny ASR model says "Hello world." for any audio, the tiny aligner puts the k-th
    timestamp in bin 5k (80 ms each): Hello 0.4-0.8 s, world 1.2-1.6 s into the segment."""
    with engine.http() as http:
        health = http.get("/health").json()
        plain = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", CLIP)},
            data={"response_format": "verbose_json"},
        )
        aligned = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", CLIP)},
            data={
                "response_format": "verbose_json",
                "timestamp_granularities[]": ["word", "segment"],
            },
        )
        srt = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", CLIP)},
            data={"response_format": "srt"},
        )
        metrics = http.get("/metrics").text
    assert health["aligner"] == {"status": "ok", "backend": "vllm", "device": "cpu", "restarts": 0}
    assert aligned.status_code == 200, aligned.text
    body = aligned.json()
    assert body["text"] == EXPECTED_TEXT
    piece = plain.json()["segments"][0]["start"]  # where the piece sent to both models begins
    hello = (round(piece + 0.4, 3), round(piece + 0.8, 3))
    world = (round(piece + 1.2, 3), round(piece + 1.6, 3))
    assert body["words"] == [
        {"word": "Hello", "start": pytest.approx(hello[0]), "end": pytest.approx(hello[1])},
        {"word": "world", "start": pytest.approx(world[0]), "end": pytest.approx(world[1])},
    ]
    [segment] = body["segments"]  # refined: from its first word's start to its last's end
    assert (segment["start"], segment["end"]) == pytest.approx((hello[0], world[1]))
    assert (
        srt.text
        == f"1\n{timestamp(hello[0], ',')} --> {timestamp(world[1], ',')}\nHello world.\n\n"
    )
    model_id = f'model_id="{checkpoint}"'
    assert f'qwen3_asr_backend_info{{backend="aligner",device="cpu",{model_id}}} 1.0' in metrics


def test_a_given_text_is_aligned_through_the_server(engine: Engine) -> None:
    """POST /v1/audio/alignments: the 3 s clip fits one pass, so the text goes to the aligner
    as it is (no ASR), and the k-th timestamp lands in bin 5k (80 ms each) of the clip."""
    with engine.http() as http:
        response = http.post(
            "/v1/audio/alignments",
            files={"file": ("a.wav", CLIP)},
            data={
                "text": "Hello world, again.",
                "language": "en",
                "response_format": "verbose_json",
            },
        )
    assert response.status_code == 200, response.text
    body = response.json()
    times = [round(bin_ * SEGMENT_TIME, 3) for bin_ in expected_bins(len(WORDS))]
    assert body["words"] == [
        {"word": word, "start": pytest.approx(times[2 * i]), "end": pytest.approx(times[2 * i + 1])}
        for i, word in enumerate(WORDS)
    ]
    assert body["placed"] == 1.0
    [segment] = body["segments"]
    assert segment["text"] == "Hello world, again."
    assert (segment["start"], segment["end"]) == pytest.approx((times[0], times[-1]))
