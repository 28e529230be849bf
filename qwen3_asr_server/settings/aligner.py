"""The second model and the speakers: Qwen3-ForcedAligner's vLLM (word timestamps) and the
diarizer (who spoke when)."""

from __future__ import annotations

import shlex

from pydantic import BaseModel, Field, field_validator, model_validator


class AlignerSettings(BaseModel):
    aligner: str | None = Field(
        None,
        description="Qwen3-ForcedAligner checkpoint (e.g. Qwen/Qwen3-ForcedAligner-0.6B) to "
        "launch as a second vLLM, for word timestamps and word-timed subtitles.",
        json_schema_extra={"env": "QWEN3_ASR_ALIGNER_MODEL", "metavar": "MODEL"},
    )
    aligner_url: str | None = Field(
        None,
        description="Use a vLLM already serving Qwen3-ForcedAligner as a pooling model at "
        "this URL instead of launching one (see Word timestamps).",
        json_schema_extra={"metavar": "URL"},
    )
    aligner_gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Fraction of GPU memory the aligner's vLLM may use (--gpu-memory-utilization "
        "then defaults to 0.75).",
        json_schema_extra={"metavar": "FRACTION", "default_text": "0.15"},
    )
    aligner_vllm_args: str = Field(
        "",
        description="More flags for the aligner's vLLM, as one string: "
        "`--aligner-vllm-args='--dtype float32'`.",
        json_schema_extra={"metavar": "FLAGS"},
    )
    diarizer: str = Field(
        "campplus",
        min_length=1,
        description="Who spoke when, for model gpt-4o-transcribe-diarize: campplus (CAM++ "
        "speaker embeddings, on the CPU, shipped in the package), none (the model refused), "
        "or a pyannote.audio 4 pipeline (speaker-diarization-community-1) as a folder or a "
        "Hugging Face id in the local cache, on the GPU when there is one (extra [pyannote]).",
        json_schema_extra={"metavar": "NAME"},
    )

    @field_validator("aligner_vllm_args")
    @classmethod
    def _shell_words(cls, value: str) -> str:
        shlex.split(value)  # unbalanced quotes: a ValueError, so a usage error now, not at launch
        return value

    @model_validator(mode="after")
    def _one_aligner(self) -> AlignerSettings:
        if self.aligner and self.aligner_url:
            raise ValueError("give --aligner (launch it) or --aligner-url (use it), not both")
        return self
