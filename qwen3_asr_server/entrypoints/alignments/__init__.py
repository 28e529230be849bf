"""POST /v1/audio/alignments: a text the client has, timed word by word in its recording by
Qwen3-ForcedAligner (`service`), shared among the pieces of a long one (`sharing`), answered
in the word-timestamp shapes (`answers`)."""
