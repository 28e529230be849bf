"""POST /v1/audio/transcriptions and /v1/audio/translations: the multipart form read and
checked (`protocol`, with the known speakers' references in `known_speakers`), the
transcription service's answer written back whole or streamed (`routes`), and the schema
`/openapi.json` publishes for them (`openapi`)."""
