"""Stages: the steps a transcript goes through after the model wrote it, in order, each over
the one `Transcript` value. Word alignment (`words`) is the first. A new one (speakers, say)
is a module with a `Stage` and a line in `registry`."""
