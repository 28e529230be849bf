"""A recording becomes a transcript: the service that does the work, the pieces sent to the
model, the stream of OpenAI's events, the one `Transcript` value and the formats it is
rendered in."""
