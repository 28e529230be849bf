#!/usr/bin/env python3
"""The floor for proxy CPU: a bare FastAPI endpoint that parses the upload and answers canned
JSON, under the same uvicorn, uvloop and httptools as server.py. Whatever the server costs
above this is the proxy's own work. `python scripts/floor.py --port 8100`
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI()


@app.post("/v1/audio/transcriptions")
async def transcriptions(request: Request) -> JSONResponse:
    async with request.form(max_files=1) as form:
        upload = form.get("file")
        size = 0 if upload is None or isinstance(upload, str) else upload.size
    return JSONResponse({"text": "Hello world.", "bytes": size})


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8100)
    port = parser.parse_args().port
    uvicorn.run(
        app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="warning"
    )
