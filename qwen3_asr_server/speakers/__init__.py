"""Who spoke when: the default diarizer (CAM++ speaker embeddings of short windows of speech,
clustered), the naming of known speakers, and the turns a transcript is cut and labelled by."""
