"""`--diarizer PATH` where the [pyannote] extra is not installed: the server says so and stops."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.process import ServerProcess, install_launcher


def test_a_pipeline_without_pyannote_names_the_extra(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    folder = tmp_path / "pipeline"
    folder.mkdir()
    (folder / "config.yaml").write_text("pipeline: {}\n")
    server = ServerProcess(tmp_path, ["--model", "tiny", "--diarizer", str(folder)])
    assert server.wait_exit(60) == 1
    assert "needs pyannote.audio 4 (pip install 'qwen3-asr-server[pyannote]')" in server.output()
