"""OpenAI's Realtime API for transcription: the connection, the session and its parts (turns,
the transcription worker, the live relay), client frames parsed and the server events."""
