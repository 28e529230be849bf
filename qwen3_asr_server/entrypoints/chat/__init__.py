"""POST /v1/chat/completions behind the route: vLLM's chat endpoint, Qwen3-ASR's answers
cleaned (`service`), whole or as they stream (`stream`)."""
