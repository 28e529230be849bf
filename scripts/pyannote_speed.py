"""What a pyannote.audio 4 pipeline (`--diarizer PATH`) costs per hour of audio, on the GPU or
the CPU: for a machine with a GPU, where the server's own environment may not be installed.

    python scripts/pyannote_speed.py CLIPS [--minutes 60] [--pipeline FOLDER] [--device cuda]

CLIPS is a folder of 16 kHz mono WAV files of speech (one voice each: flite's, say); they are
strung together in a seeded random order, with 0.2-1.2 s of quiet between them, into one
recording `--minutes` long. Without `--pipeline` the pipeline is the random-weight one in
community-1's layout (`tests.fixtures.tiny_pyannote`): its networks cost what the real ones
cost, but its clustering sees random voice prints, so that step may cost otherwise. It runs
once on the first 30 s (to warm up), then on the whole recording, and prints one JSON line:
wall and CPU seconds, both per hour of audio, speakers found and the GPU's peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RATE = 16000


def recording(clips: Path, minutes: float, seed: int = 0) -> np.ndarray:
    parts = []
    for path in sorted(clips.glob("*.wav")):
        with wave.open(str(path)) as file:
            if (file.getframerate(), file.getnchannels()) != (RATE, 1):
                raise SystemExit(f"{path}: not 16 kHz mono")
            parts.append(np.frombuffer(file.readframes(file.getnframes()), dtype=np.int16))
    rng = np.random.default_rng(seed)
    pieces, length = [], 0
    while length < minutes * 60 * RATE:
        clip = parts[int(rng.integers(len(parts)))]
        quiet = np.zeros(int(rng.uniform(0.2, 1.2) * RATE), dtype=np.int16)
        pieces += [clip, quiet]
        length += len(clip) + len(quiet)
    return np.concatenate(pieces)[: round(minutes * 60 * RATE)].astype(np.float32) / 32768


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", type=Path)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--pipeline", type=Path)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()

    import torch
    from pyannote.audio import Pipeline
    from pyannote.audio.telemetry import set_telemetry_metrics

    set_telemetry_metrics(False)
    folder = args.pipeline
    if folder is None:
        from tests.fixtures.tiny_pyannote import write

        folder = write(Path(tempfile.mkdtemp()) / "pipeline")
    device = torch.device(args.device)
    pipeline = Pipeline.from_pretrained(folder)
    pipeline.to(device)
    audio = torch.from_numpy(recording(args.clips, args.minutes))[None, :]
    pipeline({"waveform": audio[:, : 30 * RATE], "sample_rate": RATE})
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    cpu, wall = time.process_time(), time.perf_counter()
    output = pipeline({"waveform": audio, "sample_rate": RATE})
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    hours = audio.shape[1] / RATE / 3600
    print(
        json.dumps(
            {
                "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                "torch": torch.__version__,
                "audio_hours": round(hours, 3),
                "wall_s_per_audio_hour": round(wall / hours, 1),
                "cpu_s_per_audio_hour": round(cpu / hours, 1),
                "speakers": len(output.speaker_diarization.labels()),
                "gpu_peak_mib": round(torch.cuda.max_memory_allocated() / 2**20)
                if device.type == "cuda"
                else None,
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
