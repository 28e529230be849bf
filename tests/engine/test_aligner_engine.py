"""Qwen3-ForcedAligner served by the real vLLM CPU build, as word timestamps will use it.

vLLM runs the tiny scripted aligner (tests/fixtures/tiny_aligner.py) directly, with the flags
and request the server's aligner process needs: a pooling runner whose STEP pooler returns one
row of time-bin scores per ``<timestamp>`` token, a chat template without roles, and the rows
as little-endian float16 bytes described by the ``metadata`` header. The scripted bins are
exact, so every row is checked.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
from tokenizers import Tokenizer

from qwen3_asr_server.alignment import CHAT_TEMPLATE
from qwen3_asr_server.launch import cpu_kv_cache_bytes, free_port
from tests.engine.conftest import (
    ENGINE_VENV,
    STARTUP_TIMEOUT,
    Engine,
    engine_environment,
    start_engine,
)
from tests.fixtures.audio import wav
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

MODEL = "qwen3-forced-aligner"
WORDS = ("Hello", "world", "again")
CLIP = wav(3.0)


@dataclass(frozen=True)
class Aligner:
    url: str
    model_dir: Path

    def pooling(self, **fields: object) -> httpx.Response:
        """POST /pooling: the three words against the clip, as the server will send them."""
        body = {"model": MODEL, "task": "token_classify", "messages": _messages(), **fields}
        response = httpx.post(f"{self.url}/pooling", json=body, timeout=60)
        assert response.status_code == 200, response.text
        return response


def _text() -> str:
    return "".join(f"{word}{TIMESTAMP}{TIMESTAMP}" for word in WORDS)


def _messages() -> list[dict[str, object]]:
    audio = {"data": base64.b64encode(CLIP).decode(), "format": "wav"}
    text = {"type": "text", "text": _text()}
    content = [{"type": "input_audio", "input_audio": audio}, text]
    return [{"role": "user", "content": content}]


@pytest.fixture(scope="module")
def aligner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aligner]:
    """`vllm serve` on the tiny aligner; its whole process group is killed afterwards."""
    vllm = ENGINE_VENV / "bin" / "vllm"
    if not vllm.exists():
        pytest.fail(f"vLLM's CPU build is not installed at {ENGINE_VENV} (see conftest.py)")
    tmp = tmp_path_factory.mktemp("aligner")
    model_dir = write_tiny_aligner(tmp / "tiny-qwen3-forced-aligner")
    template = tmp / "aligner.jinja"
    template.write_text(CHAT_TEMPLATE)
    scratch = tmp / "scratch"
    scratch.mkdir()
    port = free_port()
    step = {"tok_pooling_type": "STEP", "step_tag_id": TIMESTAMP_TOKEN_ID}
    argv = [
        str(vllm), "serve", str(model_dir),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--served-model-name", MODEL,
        "--max-model-len", "2048",
        "--kv-cache-dtype", "auto",
        "--runner", "pooling",
        "--hf-overrides", '{"architectures":["Qwen3ASRForcedAlignerForTokenClassification"]}',
        "--pooler-config", json.dumps(step),
        "--chat-template", str(template),
        "--dtype", "float32",  # the scripted classifier overflows 16-bit types
        "--enforce-eager",
        "--kv-cache-memory-bytes", str(cpu_kv_cache_bytes(0)),  # the server's floor: 256 MiB
        "--distributed-executor-backend", "uni",
    ]  # fmt: skip
    env = {
        **engine_environment(vllm, scratch),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(len(os.sched_getaffinity(0))),
    }
    log = tmp / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited {proc.returncode}:\n{log.read_text()[-5000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM not ready in {STARTUP_TIMEOUT} s:\n{log.read_text()[-5000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.5)
        yield Aligner(url, model_dir)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        with contextlib.suppress(ProcessLookupError):  # anything left in the group
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_bytes_answer_gives_exact_bins(aligner: Aligner) -> None:
    """One float16 row per <timestamp>; word i spans rows 2i and 2i+1."""
    response = aligner.pooling(encoding_format="bytes", embed_dtype="float16", endianness="little")
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


def test_prompt_is_audio_then_words_without_roles(aligner: Aligner) -> None:
    """The server's template, not the checkpoint's ChatML one, renders what /pooling reads."""
    tokenizer = Tokenizer.from_file(str(aligner.model_dir / "tokenizer.json"))
    start, pad, end = (tokenizer.token_to_id(t) for t in (AUDIO_START, AUDIO_PAD, AUDIO_END))
    body = {"model": MODEL, "messages": _messages(), "add_generation_prompt": False}
    response = httpx.post(f"{aligner.url}/tokenize", json=body, timeout=60)
    assert response.status_code == 200, response.text
    tokens = response.json()["tokens"]
    audio = tokens.index(end)
    assert tokens[: audio + 1] == [start, *[pad] * (audio - 1), end]
    assert audio > 10  # the processor expanded the clip to its audio tokens
    assert tokens[audio + 1 :] == tokenizer.encode(_text()).ids
    assert tokens.count(TIMESTAMP_TOKEN_ID) == 2 * len(WORDS)
    usage = json.loads(aligner.pooling(encoding_format="bytes").headers["metadata"])["usage"]
    assert usage["prompt_tokens"] == len(tokens)


@pytest.fixture(scope="module")
def engine_with_aligner(
    tmp_path_factory: pytest.TempPathFactory, aligner: Aligner
) -> Iterator[Engine]:
    yield from start_engine(tmp_path_factory, "--aligner-url", aligner.url)


def test_word_timestamps_through_the_server(engine_with_aligner: Engine) -> None:
    """server.py --cpu --aligner-url: the tiny ASR model says "Hello world." for any audio,
    the tiny aligner puts the k-th timestamp in bin 5k (80 ms each)."""
    with engine_with_aligner.http() as http:
        response = http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", CLIP)},
            data={
                "response_format": "verbose_json",
                "timestamp_granularities[]": ["word", "segment"],
            },
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["text"] == EXPECTED_TEXT
    [segment] = body["segments"]
    start = segment["start"]
    assert body["words"] == [
        {"word": "Hello", "start": pytest.approx(start + 0.4), "end": pytest.approx(start + 0.8)},
        {"word": "world", "start": pytest.approx(start + 1.2), "end": pytest.approx(start + 1.6)},
    ]
