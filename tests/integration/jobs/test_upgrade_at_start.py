"""`server.py` started on a data folder an earlier release wrote: the jobs database upgraded
before the server listens (logged), its recording served byte for byte with the same
`--api-key`; then the same folder as a newer release would leave it: the server refuses to
start, with one line that says why, and leaves the database as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import openai
from sqlalchemy import insert

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, free_port, install_launcher
from tests.unit.jobs.test_store import a_file
from tests.unit.jobs.test_upgrade import HEAD, PROJECTS, release

KEY = "sk-old-release"
ARGS = ["--model", "tiny", "--api-key", KEY]


def test_a_data_folder_an_earlier_release_wrote_is_served_then_a_newer_ones_refused(
    tmp_path: Path,
) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    data = tmp_path / "data"
    (data / "files").mkdir(parents=True)
    recording = wav(1.0)
    (data / "files" / "file-old").write_bytes(recording)
    before, engine = release(PROJECTS), engine_for(None, data)  # as that release made it
    before.create_all(engine)
    row = {**a_file("file-old"), "filename": "call.wav", "bytes": len(recording)}
    del row["project"]
    with engine.begin() as db:
        db.execute(insert(before.tables["files"]).values(**row))
    engine.dispose()
    database = data / "jobs.sqlite3"

    server = ServerProcess(tmp_path, ARGS)
    try:
        server.wait_for_health(200)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        assert [each.id for each in client.files.list()] == ["file-old"]
        assert client.files.retrieve("file-old").filename == "call.wav"
        assert client.files.content("file-old").content == recording
    finally:
        server.stop()
    assert f"upgraded from schema revision none (a release before revisions) to {HEAD}" in (
        server.output()
    )

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
