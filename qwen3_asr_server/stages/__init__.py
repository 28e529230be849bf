"""Stages: the steps a transcript goes through after the model wrote it, in order, each over
the one `Transcript` value: word alignment (`words`), then speakers (`speakers`). What a stage
is, when each of its parts runs and how to add one: `transcription.stage.Stage`."""
