"""The Wyoming protocol (`--wyoming-port`): Home Assistant's speech-to-text, beside the HTTP API
in the same process, through the same transcription service, admission, metrics and drain."""
