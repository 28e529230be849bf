"""`server.py` started on a data folder the release before revisions wrote
(`tests/fixtures/releases/b74cbc6`: its server, given `--api-key`, stored a recording and ran
a one-line batch on it): the jobs database upgraded before the server listens (logged), the
recording served byte for byte and the batch's answer read with the same key, and new work
going on. Then the same folder as a newer release would leave it: the server refuses to
start, with one line that says why, and leaves the database as it was."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import openai

from tests.fixtures.audio import wav
from tests.fixtures.process import REPO, ServerProcess, free_port, install_launcher
from tests.unit.jobs.test_upgrade import HEAD

RELEASE = REPO / "tests" / "fixtures" / "releases" / "b74cbc6"
KEY = "sk-old-release"  # the --api-key it was written with
ARGS = ["--model", "tiny", "--api-key", KEY]
RECORDING = "file-c3679f995076ad7a8ce4c22114bdb71e"  # call.wav: wav(1.0)
BATCH = "batch_ccb73a68f2eb966d9930537dfda2d685"


def test_a_data_folder_the_last_release_wrote_is_served_then_a_newer_ones_refused(
    tmp_path: Path,
) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    shutil.copytree(RELEASE, tmp_path / "data")
    server = ServerProcess(tmp_path, ARGS, {"FAKE_VLLM_DESCRIBE": "1"})
    try:
        server.wait_for_health(200)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        assert client.files.retrieve(RECORDING).filename == "call.wav"
        assert client.files.content(RECORDING).content == wav(1.0)
        batch = client.batches.retrieve(BATCH)
        assert batch.status == "completed"
        assert batch.request_counts is not None
        assert batch.request_counts.completed == 1
        assert batch.output_file_id is not None
        (answer,) = client.files.content(batch.output_file_id).text.splitlines()
        assert json.loads(answer)["response"]["body"] == "Heard 1.00 s.\n"
        assert [each.id for each in client.batches.list()] == [BATCH]
        assert len(client.files.list().data) == 3  # the recording, the input, the output
        added = client.files.create(file=("later.wav", wav(0.5)), purpose="user_data")
        assert client.files.content(added.id).content == wav(0.5)
    finally:
        server.stop()
    assert f"upgraded from schema revision none (a release before revisions) to {HEAD}" in (
        server.output()
    )

    database = tmp_path / "data" / "jobs.sqlite3"
    with sqlite3.connect(database) as db:
        db.execute("UPDATE alembic_version SET version_num = '0099'")
    refused = ServerProcess(tmp_path, ARGS, port=server.port)
    assert refused.wait_exit() == 1
    last = refused.output().strip().splitlines()[-1]
    assert last.startswith("qwen3-asr-server: error: the jobs database (sqlite:///"), last
    assert "at schema revision '0099', which a newer release of qwen3-asr-server wrote" in last
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("0099",)]


def test_a_database_that_cannot_be_opened_stops_the_start_with_one_line(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    closed = f"postgresql://notes:pw-never-shown@127.0.0.1:{free_port()}/jobs"
    server = ServerProcess(tmp_path, [*ARGS, "--jobs-db", closed])
    assert server.wait_exit() == 1
    said = server.output().strip().splitlines()
    assert said[-1].startswith(
        "qwen3-asr-server: error: cannot open the jobs database "
        "(postgresql+psycopg://notes:***@127.0.0.1:"
    ), said
    assert "Connection refused" in said[-1]
    assert "pw-never-shown" not in server.output()
    assert server.starts() == []  # no vLLM was started
