"""A recording becomes a transcript: what one transcription asks for (with no HTTP in it),
the service that does the work, the pieces sent to the model, the stream of OpenAI's events,
the one `Transcript` value and the formats it is rendered in."""
