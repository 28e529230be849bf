"""What `describe` is answered with: one ASR program, the served model, its languages."""

from __future__ import annotations

from wyoming.info import AsrModel, AsrProgram, Attribution, Info

from ... import __version__
from ...model.languages import SUPPORTED
from ...settings.composite import Settings

QWEN = Attribution(name="Qwen team, Alibaba Cloud", url="https://github.com/QwenLM/Qwen3-ASR")
SERVER = Attribution(name="qwen3-asr-server", url="https://github.com/malaiwah/qwen3-asr-server")


def info(settings: Settings) -> Info:
    """The program and its one model. Languages are the ISO codes Home Assistant lists and
    sends back in `transcribe`. Endpointing is the server's too (`requires_external_vad`
    false): a command ends at `audio-stop` or at the pause heard after its speech
    (`endpoint`), unless --no-wyoming-endpointing leaves it to the client's VAD. The text is
    streamed (`transcript-chunk`) as vLLM writes it."""
    model = AsrModel(
        name=settings.served_name,
        description=f"Qwen3-ASR ({settings.model}) on vLLM",
        attribution=QWEN,
        installed=True,
        version=None,
        languages=[language.code for language in SUPPORTED],
    )
    program = AsrProgram(
        name="qwen3-asr-server",
        description="Qwen3-ASR speech-to-text on vLLM",
        attribution=SERVER,
        installed=True,
        version=__version__,
        models=[model],
        supports_transcript_streaming=True,
        requires_external_vad=not settings.wyoming_endpointing,
    )
    return Info(asr=[program])
