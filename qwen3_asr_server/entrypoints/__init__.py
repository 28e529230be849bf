"""The server's front doors, one slice each, and what they share.

Each slice owns its routes, its wire models and the policy that is its alone: `audio` (the
transcription and translation routes), `alignments`, `chat`, `jobs` (Files, Batches,
webhooks), `realtime` (WebSocket, WebRTC calls, ephemeral keys, their CORS), `wyoming` (a
port of its own), `ui` (the playground), `health` and `models`. Below them, shared by all:
`middleware` (what wraps every HTTP request), `protocol` (the field types several doors read,
the body readers, the addresses a client may name), `named` (routes with a name and a
schema) and `state` (the app's services, which the routes reach and hand down narrowed).
Everything under here may use the core; nothing in the core imports from here.
"""
