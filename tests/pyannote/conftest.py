"""`--diarizer PATH`: the server run from an environment with the [pyannote] extra, loading a
pipeline folder in community-1's layout with random weights (`tests.fixtures.tiny_pyannote`).

That environment is `.cache/pyannote` (`bash scripts/install-pyannote.sh .cache/pyannote`,
which `scripts/test.sh` runs; `ASR_TEST_PYANNOTE_VENV` points elsewhere): pyannote.audio needs
a torch and torchaudio that this suite's own environment does not have.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.process import REPO, ServerProcess, install_launcher

PYANNOTE_VENV = Path(os.environ.get("ASR_TEST_PYANNOTE_VENV", REPO / ".cache" / "pyannote"))
PYTHON = PYANNOTE_VENV / "bin" / "python"


def environment(scratch: Path) -> dict[str, str]:
    """No network, and the Hugging Face cache in `scratch`, out of ~/.cache."""
    return {
        "HF_HOME": str(scratch / "hf"),
        "HF_HUB_OFFLINE": "1",
        "FAKE_VLLM_DESCRIBE": "1",
        "OMP_NUM_THREADS": "1",
    }


def start(tmp: Path, *args: str, env: dict[str, str] | None = None) -> ServerProcess:
    """`server.py` from the pyannote environment, before the stand-in vLLM."""
    install_launcher(tmp / "bin", "vllm")
    return ServerProcess(
        tmp,
        ["--model", "tiny", *args],
        {**environment(tmp), **(env or {})},
        python=str(PYTHON),
    )


@pytest.fixture(scope="session")
def pipeline_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pyannote") / "speaker-diarization-tiny"
    subprocess.run(
        [str(PYTHON), "-m", "tests.fixtures.tiny_pyannote", str(folder)],
        cwd=REPO,
        env={**os.environ, "PYANNOTE_METRICS_ENABLED": "false", "PYTHONWARNINGS": "ignore"},
        check=True,
        capture_output=True,
    )
    return folder


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, pipeline_folder: Path
) -> Iterator[ServerProcess]:
    running = start(tmp_path_factory.mktemp("server"), "--diarizer", str(pipeline_folder))
    try:
        running.wait_for_health(200, timeout=120)
        yield running
    finally:
        running.stop()
