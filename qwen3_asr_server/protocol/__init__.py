"""What a client may ask, described once: one typed model per request family (the audio form,
the Realtime session configuration, the chat request), built from shared field types
(`fields`), and the schema `/openapi.json` publishes, made from those models (`openapi`)."""
