"""Speech as audio: any upload decoded to 16 kHz mono samples, where speech is (Silero VAD, live
and over a recording), where a long recording is cut, and the small neural networks that ship
in the package, run on the CPU in threads a request can stop. Nothing here knows HTTP or
Qwen3-ASR."""
