"""The server's life as processes: the command line (`cli`), uvicorn set up and run in one
process or in each of `--workers N` (`server`, `worker`), the protocol classes under it, and
the drain (`capacity.drain`) run before it stops, so that no request is dropped.

With `--workers N` the main process (`manager`) owns the vLLM supervisors and N HTTP workers
on one port; a small shared table (`capacity.table`) tells the workers what the supervisors
know (`backend_view`, `shared_activity`) and lets them share the admission limits.
"""
