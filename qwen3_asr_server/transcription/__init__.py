"""An upload becomes a transcript: the form read, the audio sent in pieces, the answer
streamed or rendered in the format the client asked for."""
