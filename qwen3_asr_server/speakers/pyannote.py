"""The production diarizer: a pyannote.audio 4 pipeline (`speaker-diarization-community-1`,
or one of its layout) from a local folder or the Hugging Face cache, on the GPU when there is
one (`--diarizer PATH`, extra `[pyannote]`).

It answers as the default diarizer does (regions of one speaker each, A, B, ... in order of
first speech, known speakers named by the cosine of their reference to a speaker's centroid),
from pyannote's *exclusive* diarization: one speaker per moment, as OpenAI's `diarized_json`
has it, where pyannote gives overlapped speech to the likelier speaker. Its own segmentation
hears who speaks, so Silero's probabilities are not used here.

Nothing is downloaded: a Hugging Face id is looked up in the local cache only, and pyannote's
usage telemetry is off (`onnx_models.disable_telemetry`). The pipeline is one per process and is
not known to be safe from several threads at once, so its calls take turns.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import LaunchError
from ..speech.audio import RATE
from ..speech.segmentation import Span
from ..speech.silero import FULL_SCALE, Probabilities
from .count import SpeakerCount
from .diarize import Known, Voices, labels, regions
from .embedding import Embeddings, unit

logger = logging.getLogger(__name__)

Turn = tuple[int, int, int]  # a turn's first and end sample, and its speaker's number

INSTALL = "pip install 'qwen3-asr-server[pyannote]'"


def folder_of(source: str) -> Path:
    """The pipeline folder `--diarizer` names: a folder holding `config.yaml`, or a Hugging
    Face id (`pyannote/speaker-diarization-community-1`) already in the local cache."""
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "config.yaml").is_file():
            raise LaunchError(f"--diarizer {source}: the folder has no config.yaml")
        return path
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(source, local_files_only=True))
    except (HFValidationError, LocalEntryNotFoundError) as exc:
        raise LaunchError(
            f"--diarizer {source}: neither a folder nor a pipeline in the Hugging Face cache "
            "(the server downloads nothing: fetch it first with `hf download`)"
        ) from exc


def load(source: str) -> PyannoteDiarizer:
    """The pipeline `--diarizer` names, on the GPU if torch sees one; a LaunchError that says
    what to do when pyannote.audio is missing or the pipeline cannot be read."""
    try:
        with warnings.catch_warnings():  # torchcodec without FFmpeg: audio comes decoded here
            warnings.simplefilter("ignore")
            import torch
            from pyannote.audio import Pipeline
    except ImportError as exc:
        raise LaunchError(f"--diarizer {source} needs pyannote.audio 4 ({INSTALL}): {exc}") from exc
    folder = folder_of(source)
    try:
        pipeline = Pipeline.from_pretrained(folder)
    except Exception as exc:  # pyannote raises whatever its parts raise
        raise LaunchError(f"--diarizer {source}: cannot load the pipeline: {exc}") from exc
    if pipeline is None or not hasattr(pipeline, "_embedding"):
        raise LaunchError(f"--diarizer {source}: not a speaker diarization pipeline")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pipeline.to(device)
    logger.info("diarizer: pyannote pipeline %s on %s", folder, device)
    return PyannoteDiarizer(pipeline)


class PyannoteDiarizer:
    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline
        self._turn = threading.Lock()

    def regions(
        self,
        samples: npt.NDArray[np.int16],
        probabilities: Probabilities,
        known: Sequence[Known] = (),
        count: SpeakerCount | None = None,
    ) -> list[Span]:
        """The recording's regions of one speaker each, labelled; none without speech; as
        many speakers as `count` allows (the pipeline's own `min_speakers`/`max_speakers`)."""
        found, means = self._turns(samples, count)
        names = labels(means, known if means.shape[1] > 1 else ())
        return regions([Span(start, end, names[who]) for start, end, who in found], len(samples))

    def utterance(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities, voices: Voices
    ) -> list[Span]:
        """A Realtime utterance's regions, labelled as the session's speakers (`voices`)."""
        found, means = self._turns(samples)
        if not found:
            return [Span(0, len(samples), voices.last)]
        if means.shape[1] == 1:  # no centroids to tell the voices by
            names = [voices.last] * len(means)
        else:
            names = [voices.label(mean[None, :]) for mean in means]
        return regions([Span(start, end, names[who]) for start, end, who in found], len(samples))

    def voice(
        self, samples: npt.NDArray[np.int16], probabilities: Probabilities
    ) -> npt.NDArray[np.float32]:
        """The embedding of a known speaker's reference clip, by the pipeline's own model."""
        with self._turn:
            embedding = self._pipeline._embedding(_waveform(samples)[None])
        found: npt.NDArray[np.float32] = unit(np.nan_to_num(embedding[0]).astype(np.float32))
        return found

    def _turns(
        self, samples: npt.NDArray[np.int16], count: SpeakerCount | None = None
    ) -> tuple[list[Turn], Embeddings]:
        """The turns of one speaker each, in order, and each voice's centroid (`turns`)."""
        bounds = {"min_speakers": count.least, "max_speakers": count.most} if count else {}
        with self._turn:
            output = self._pipeline({"waveform": _waveform(samples), "sample_rate": RATE}, **bounds)
        return turns(output.exclusive_speaker_diarization, output.speaker_embeddings, len(samples))


def _waveform(samples: npt.NDArray[np.int16]) -> Any:
    """The samples as pyannote takes audio: a float tensor of (channel, time) in [-1, 1]."""
    import torch

    return torch.from_numpy(samples.astype(np.float32) / np.float32(FULL_SCALE))[None, :]


def turns(
    annotation: Any, centroids: npt.NDArray[np.floating[Any]] | None, length: int
) -> tuple[list[Turn], Embeddings]:
    """pyannote's annotation as turns in samples (start, end, speaker), each speaker numbered
    in order of first speech, with their unit-length centroids in that order (`centroids`
    rows are in `annotation.labels()` order), or one zero column each where it gave none."""
    tracks = sorted(
        (segment.start, segment.end, label)
        for segment, _, label in annotation.itertracks(yield_label=True)
    )
    order: dict[str, int] = {}
    found: list[Turn] = []
    for start, end, label in tracks:
        index = order.setdefault(label, len(order))
        first, last = round(start * RATE), min(round(end * RATE), length)
        if last > first:
            found.append((first, last, index))
    known = list(annotation.labels())
    means = np.zeros((len(order), 1), dtype=np.float32)
    if centroids is not None and len(centroids):
        rows = [known.index(label) for label in order]
        means = unit(np.nan_to_num(np.asarray(centroids, dtype=np.float32)[rows]))
    return found, means
