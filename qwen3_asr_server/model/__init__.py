"""Qwen3-ASR's dialect: the model ids clients may use, the 30 languages it names, the chat prompt
it is asked with, what its answers mean (the `language X<asr_text>` prefix, logprobs), and the
text Qwen3-ForcedAligner is given and what its answer means."""
