"""qwen3-asr-server: an OpenAI-compatible speech-to-text server for Qwen3-ASR on vLLM."""

__version__ = "0.1.0"
