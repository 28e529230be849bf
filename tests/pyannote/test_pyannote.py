"""`--diarizer PATH` through the HTTP API: a pyannote.audio 4 pipeline in community-1's layout,
loaded from a folder or the Hugging Face cache, answering `gpt-4o-transcribe-diarize`.

Its weights are random and its segmentation says "one speaker throughout" (see
`tests.fixtures.tiny_pyannote`), so every segment is speaker A even where two flite voices
speak, where the default diarizer tells them apart: an answer only that pipeline gives.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.audio import TranscriptionDiarized

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.containers import encode
from tests.fixtures.conversations import RATE, Conversation, conversation, spoken
from tests.fixtures.process import ServerProcess
from tests.fixtures.realtime_speakers import segments, session, started
from tests.pyannote.conftest import start


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """Two flite voices, four turns, ~10 s."""
    return conversation(2, 4, tmp_path_factory.mktemp("voices"), seed=1)


def sdk(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def test_the_pipeline_says_who_spoke(server: ServerProcess, talk: Conversation) -> None:
    answer = sdk(server).audio.transcriptions.create(
        model=DIARIZE, file=("talk.wav", talk.wav()), response_format="diarized_json"
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert answer.duration == pytest.approx(len(talk.samples) / RATE, abs=0.01)
    assert answer.segments
    assert {segment.speaker for segment in answer.segments} == {"A"}
    assert answer.text == " ".join(segment.text for segment in answer.segments)
    assert "diarizer: pyannote pipeline" in server.output()
    assert " on cpu" in server.output()


def test_a_speaker_count_reaches_the_pipeline(server: ServerProcess, talk: Conversation) -> None:
    """The pipeline alone hears one speaker: told two spoke, its clustering finds two."""
    answer = sdk(server).audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        extra_body={"min_speakers": 2, "max_speakers": 2},
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert {segment.speaker for segment in answer.segments} == {"A", "B"}


def test_a_known_speaker_is_named_by_the_pipelines_embedding(
    server: ServerProcess, talk: Conversation, tmp_path: Path
) -> None:
    reference = spoken("slt", "This is my voice, the one you will hear.", tmp_path)
    data = encode(reference.astype("float32") / 32768, RATE, "ogg")
    answer = sdk(server).audio.transcriptions.create(
        model=DIARIZE,
        file=("talk.wav", talk.wav()),
        response_format="diarized_json",
        extra_body={
            "known_speaker_names": ["agent"],
            "known_speaker_references": [
                f"data:audio/ogg;base64,{base64.b64encode(data).decode()}"
            ],
        },
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert {segment.speaker for segment in answer.segments} == {"agent"}


def test_a_stream_carries_the_speakers(server: ServerProcess, talk: Conversation) -> None:
    with httpx.stream(
        "POST",
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("talk.wav", talk.wav())},
        data={"model": DIARIZE, "stream": "true", "response_format": "diarized_json"},
        timeout=300,  # pyannote on a busy 2-core CPU: a guard, not a measure
    ) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line.startswith("data: {")]
    found = [line for line in lines if '"transcript.text.segment"' in line]
    assert found
    assert all('"speaker":"A"' in line for line in found)


def test_a_pipeline_from_the_hugging_face_cache(tmp_path: Path, pipeline_folder: Path) -> None:
    """`--diarizer ORG/NAME` finds a pipeline the cache already holds, offline."""
    repo = tmp_path / "hf" / "hub" / "models--acme--speaker-diarization-tiny"
    revision = "0" * 40
    shutil.copytree(pipeline_folder, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    server = start(tmp_path, "--diarizer", "acme/speaker-diarization-tiny")
    try:
        server.wait_for_health(200, timeout=120)
        models = httpx.get(f"{server.url}/v1/models", timeout=10).json()
        assert DIARIZE in [model["id"] for model in models["data"]]
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("diarizer", "said"),
    [
        ("acme/not-downloaded", "neither a folder nor a pipeline in the Hugging Face cache"),
        ("{empty}", "the folder has no config.yaml"),
        ("{broken}", "cannot load the pipeline"),
    ],
)
def test_a_pipeline_that_cannot_load_stops_the_server(
    tmp_path: Path, pipeline_folder: Path, diarizer: str, said: str
) -> None:
    (tmp_path / "empty").mkdir()
    broken = tmp_path / "broken"
    shutil.copytree(pipeline_folder, broken)
    (broken / "embedding" / "pytorch_model.bin").write_bytes(b"not a checkpoint")
    source = diarizer.format(empty=tmp_path / "empty", broken=broken)
    server = start(tmp_path, "--diarizer", source)
    assert server.wait_exit(120) == 1
    assert f"error: --diarizer {source}: {said}" in server.output()


def test_a_realtime_session_gets_the_pipelines_speakers(
    server: ServerProcess, talk: Conversation
) -> None:
    url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    events = asyncio.run(session(url, talk))
    found = segments(events)
    assert {segment.item_id for segment in found} == set(started(events))
    for item in started(events):  # the pipeline hears one speaker throughout each utterance
        assert len({segment.speaker for segment in found if segment.item_id == item}) == 1
    # its random voice prints may or may not match across utterances: A, B, ... in order
    heard = list(dict.fromkeys(segment.speaker for segment in found))
    assert heard == [chr(ord("A") + index) for index in range(len(heard))]
