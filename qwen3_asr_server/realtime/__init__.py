"""OpenAI's Realtime API for transcription: client events parsed, the session that buffers
and cuts the audio into utterances, and the server events it answers with."""
