"""What several front doors read alike: the field types the request models are built from
(`fields`), a JSON body read and checked (`body`), and the addresses a client may name for the
server to reach (`addresses`). Each door's own wire models live in its slice."""
