#!/usr/bin/env python3
"""Transcribe an audio file (or a folder of them) with a running qwen3-asr-server.

usage: ./test-asr.py FILE [--language en|English] [--context "Hermes, oikos"]
                          [--format json|text|srt|vtt|verbose_json | --words]
                          [--align TEXT_FILE]
                          [--stream | --realtime]
                          [--translate | --speakers N] [--multichannel]
                          [--url http://localhost:8000] [--api-key KEY] [--model whisper-1]
                          [--timeout 600]
       ./test-asr.py --batch DIR [--recursive] [--no-wait] [--language ...] [--context ...]
                          [--format ...] [--translate | --speakers N] [--multichannel]
                          [--url ...] [--api-key KEY]

examples:
  ./test-asr.py meeting.wav --language en
  ./test-asr.py lecture.mp3 --context "Hermes, oikos" --stream
  ./test-asr.py clip.m4a --format srt > clip.srt
  ./test-asr.py song.mp3 --words
  ./test-asr.py chapter1.mp3 --align chapter1.txt --format srt > chapter1.srt
  ./test-asr.py call.wav --realtime
  ./test-asr.py interview.mp3 --speakers 2 --format srt
  ./test-asr.py call.wav --multichannel --format vtt
  ./test-asr.py --batch recordings/ --format srt

--format json and text print the transcript, srt and vtt the subtitle file as the server
sends it, verbose_json the whole answer (segments, timestamps) pretty-printed. --words prints
one line per word, its start and end in seconds (the server must run with --aligner).
--align TEXT_FILE times the words of a text you have (a book's chapter, a script) in the
recording (/v1/audio/alignments, the server must run with --aligner): one line per word as
--words prints them, then on stderr the share of the words the aligner placed; with --format
srt, vtt or verbose_json the server's answer in that format.
--context primes the model with names and terms: the file goes to /v1/chat/completions as an
input_audio part, the context as the system message, a --language as the assistant's pre-fill.
--stream prints the text as the model writes it. On a terminal (or with --progress) a json or
text transcription shows the pieces the server cut the file into, done of planned, on stderr:
the file is sent as a stream, whose progress comments the server adds. --realtime plays the file to
/v1/realtime?intent=transcription as a microphone would (24 kHz PCM, in real time) and prints
each utterance's text as it comes, one line per utterance. --batch DIR uploads the folder's
audio files (by extension; --recursive for its sub-folders too) and transcribes them as one
batch (/v1/files, /v1/batches): it shows done of total on stderr, writes each transcript beside
its recording (talk.mp3 -> talk.txt, .srt, .vtt or, for verbose_json, .json) and prints its path;
Ctrl-C cancels the batch, --no-wait prints the batch's id and leaves it running. --speakers N
says N people spoke: the model is gpt-4o-transcribe-diarize, told min_speakers = max_speakers
= N (the server must run a diarizer); verbose_json, srt and vtt show who said what. The API
key comes from --api-key or the QWEN_API_KEY environment variable.

--multichannel transcribes each channel of the file apart (a call's agent and customer), each
channel its own speaker; with --stream it prints each piece as a channel finishes it, a line each,
as "[A] text".

exit status: 0 the transcript was printed (with --batch: every recording has its transcript),
1 the request failed (one line on stderr says why), 2 a usage error. Needs httpx
(pip install httpx); --realtime also PyAV and websockets (pip install av websockets).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    import httpx
except ImportError:
    sys.exit("test-asr: error: this script needs httpx: pip install httpx")

# This script's folder holds its batch mode and the package. The server's own table of
# Qwen3-ASR's languages needs nothing beyond the standard library.
import asr_batch
from qwen3_asr_server.model import languages

FORMATS = ("json", "text", "srt", "vtt", "verbose_json")
DIARIZE = "gpt-4o-transcribe-diarize"  # the model that labels speakers


class Failure(Exception):
    """The request failed; the message is the one line to print."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    summary, _, details = (__doc__ or "").partition("\n\n")
    parser = argparse.ArgumentParser(
        description=summary,
        epilog=details.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("file", metavar="FILE", nargs="?", help="the audio file (wav, mp3, m4a, ... FFmpeg reads)")
    add("--batch", metavar="DIR", help="transcribe the folder's audio files as one batch")
    add("--recursive", action="store_true", help="--batch: the sub-folders' files too")
    add("--no-wait", dest="wait", action="store_false", help="--batch: print its id and exit")
    add("--language", metavar="LANG", help="the spoken language, code or English name: fr, French")
    add("--context", metavar="TERMS", help="names and terms to prime the model with")
    add("--format", choices=FORMATS, default="json", help="what to print (default: json)")
    add("--words", action="store_true", help="print each word with its start and end")
    add("--align", metavar="TEXT_FILE", help="time the words of this text in the recording")
    add("--stream", action="store_true", help="print the text as the model writes it")
    add("--realtime", action="store_true", help="stream the file live over the Realtime API")
    add("--translate", action="store_true", help="use /v1/audio/translations")
    add("--speakers", type=int, metavar="N", help=f"N people spoke: {DIARIZE}, told N")
    add("--multichannel", action="store_true", help="each channel apart, its own speaker")
    add("--url", default="http://localhost:8000", help="the server (default: %(default)s)")
    add("--api-key", metavar="KEY", default=os.environ.get("QWEN_API_KEY"), help="or QWEN_API_KEY")
    add("--model", help=f"the model id to send (default: whisper-1; --speakers: {DIARIZE})")
    add("--timeout", type=float, default=600.0, metavar="SECONDS", help="default: %(default)g")
    add(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="show pieces done of planned on stderr (default: when stderr is a terminal; "
        "--batch: always)",
    )
    args = parser.parse_args(argv)
    check_combinations(parser, args)
    args.model = args.model or (DIARIZE if args.speakers else "whisper-1")
    if args.language:
        try:
            args.language = languages.resolve(args.language)
        except ValueError as exc:
            parser.error(str(exc))
    if not args.url.startswith(("http://", "https://")):
        parser.error(f"--url must start with http:// or https://, got {args.url!r}")
    args.url = args.url.rstrip("/")
    if args.batch is not None:
        if not Path(args.batch).is_dir():
            parser.error(f"--batch wants a folder: {args.batch} is not one")
        args.progress = args.progress is not False  # the batch's counts, unless --no-progress
        return args
    plain = args.format in ("json", "text") and not (args.words or args.translate or args.align)
    whole = not (args.stream or args.realtime or args.multichannel) and args.context is None
    wanted = sys.stderr.isatty() if args.progress is None else args.progress
    args.progress = wanted and plain and whole
    read_files(parser, args)
    return args


def read_files(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The audio, and --align's text; a usage error if one cannot be read."""
    try:
        args.audio = Path(args.file).read_bytes()
    except OSError as exc:
        parser.error(f"cannot read {args.file}: {exc.strerror or exc}")
    try:
        args.text = Path(args.align).read_text(encoding="utf-8") if args.align else None
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read {args.align}: {exc}")


def check_combinations(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for flags that cannot go together."""
    if (args.file is None) == (args.batch is None):
        parser.error("give one FILE, or --batch DIR")
    if args.batch is not None and (args.stream or args.realtime or args.words):
        parser.error("--batch writes whole answers: drop --stream, --realtime and --words")
    if args.batch is None and (args.recursive or not args.wait):
        parser.error("--recursive and --no-wait go with --batch DIR")
    if args.translate and (args.language or args.stream or args.context is not None):
        parser.error("--translate cannot be combined with --language, --stream or --context")
    if args.realtime and (args.stream or args.translate or args.format != "json"):
        parser.error("--realtime prints plain text: drop --stream, --translate and --format")
    if args.words and (args.stream or args.realtime or args.context is not None):
        parser.error("--words needs the whole answer: drop --stream, --realtime and --context")
    chat = args.context is not None and args.batch is None  # the file goes to chat
    others = args.translate or args.realtime or args.model or chat or args.multichannel
    if args.speakers is not None and others:
        parser.error(
            f"--speakers uses {DIARIZE} on /v1/audio/transcriptions: drop --translate, "
            "--realtime, --context, --model and --multichannel"
        )
    if args.speakers is not None and not 1 <= args.speakers <= 20:
        parser.error("--speakers takes 1 to 20")
    if args.words and args.format != "json":
        parser.error(f"--words prints its own lines: drop --format {args.format}")
    if args.multichannel and args.realtime:
        parser.error("--multichannel reads a file's channels: drop --realtime")
    if args.multichannel and args.context is not None and args.batch is None:
        parser.error("--multichannel goes to the audio route: drop --context")
    alone = args.batch or args.stream or args.realtime or args.words or args.translate
    alone = alone or args.multichannel or args.speakers is not None
    if args.align and (alone or args.context is not None):
        parser.error("--align sends the file and the text alone: drop the other modes")
    if args.align and args.format == "text":
        parser.error("--align prints words, srt, vtt or verbose_json: drop --format text")
    plain_only = args.stream or (args.context is not None and args.batch is None)
    if plain_only and args.format not in ("json", "text"):
        parser.error(f"--stream and --context print plain text: drop --format {args.format}")


def explain(response: httpx.Response, key_sent: bool) -> str:
    """One line for a failed request: a hint when there is one, else the server's message."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else error
    message = str(message or response.text.strip()[:200] or response.reason_phrase)
    if response.status_code == 401 and not key_sent:
        return "the server wants an API key: pass --api-key or set QWEN_API_KEY"
    if response.status_code == 401:
        return f"the server refused the API key ({message}): check --api-key or QWEN_API_KEY"
    if response.status_code == 503 and "loading" in message:
        return "the model is still loading; retry in a few seconds"
    return f"{message} (HTTP {response.status_code})"


def check(response: httpx.Response, key_sent: bool) -> None:
    if response.status_code >= 400:
        response.read()
        raise Failure(explain(response, key_sent))


def alignment_request(args: argparse.Namespace) -> dict[str, Any]:
    """The multipart request for /v1/audio/alignments: the file and the text said in it."""
    kind = "verbose_json" if args.format == "json" else args.format  # json: its words
    data = {"text": args.text, "response_format": kind}
    if args.language:
        data["language"] = args.language.code
    files = {"file": (Path(args.file).name, args.audio)}
    return {"url": "/v1/audio/alignments", "data": data, "files": files}


def transcription_request(args: argparse.Namespace) -> dict[str, Any]:
    """The multipart request for /v1/audio/transcriptions or /translations."""
    data = {"model": args.model, "response_format": "json" if args.stream else args.format}
    if args.words:
        data |= {"response_format": "verbose_json", "timestamp_granularities[]": "word"}
    if args.language:
        data["language"] = args.language.code
    if args.speakers:
        data |= {"min_speakers": str(args.speakers), "max_speakers": str(args.speakers)}
    if args.stream or args.progress:
        data |= {"stream": "true", "response_format": "json"}
    if args.multichannel:
        data["multichannel"] = "true"
    endpoint = "translations" if args.translate else "transcriptions"
    files = {"file": (Path(args.file).name, args.audio)}
    return {"url": f"/v1/audio/{endpoint}", "data": data, "files": files}


def chat_request(args: argparse.Namespace) -> dict[str, Any]:
    """A context-primed chat completion: the Qwen3-ASR prompt, audio as input_audio."""
    audio = {
        "data": base64.b64encode(args.audio).decode("ascii"),
        "format": Path(args.file).suffix.lstrip(".").lower() or "wav",
    }
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": args.context},
        {"role": "user", "content": [{"type": "input_audio", "input_audio": audio}]},
    ]
    body: dict[str, Any] = {"model": args.model, "messages": messages}
    if args.language:
        messages.append(
            {"role": "assistant", "content": f"language {args.language.name}<asr_text>"}
        )
        body |= {"continue_final_message": True, "add_generation_prompt": False}
    if args.stream:
        body["stream"] = True
    return {"url": "/v1/chat/completions", "json": body}


def render(response: httpx.Response, args: argparse.Namespace) -> str:
    """What to print for a whole (not streamed) answer."""
    if args.context is not None:
        return str(response.json()["choices"][0]["message"]["content"])
    if args.align and args.format == "json":
        placed = response.json()["placed"]
        print(f"test-asr: the aligner placed {placed:.0%} of the words", file=sys.stderr)
    if args.words or (args.align and args.format == "json"):
        words = response.json()["words"]
        return "\n".join(f"{w['start']:9.3f} {w['end']:9.3f}  {w['word']}" for w in words)
    if args.format == "json":
        return str(response.json()["text"])
    if args.format == "verbose_json":
        return json.dumps(response.json(), indent=2, ensure_ascii=False)
    return response.text


class Bar:
    """Pieces done of pieces planned, redrawn in place on stderr."""

    WIDTH = 30

    def __init__(self) -> None:
        self.drawn = False

    def __call__(self, done: int, planned: int) -> None:
        filled = self.WIDTH * done // max(planned, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        sys.stderr.write(f"\rpieces {done}/{planned} [{bar}]")
        sys.stderr.flush()
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")


def sse_data(response: httpx.Response, progress: Bar | None = None) -> Iterator[str]:
    """The data of each server-sent event; the server's `: progress DONE/PLANNED` comments
    drawn on `progress`."""
    for line in response.iter_lines():
        if line.startswith("data:"):
            yield line[5:].strip()
        elif line.startswith(": progress ") and progress is not None:
            done, _, planned = line.removeprefix(": progress ").partition("/")
            progress(int(done), int(planned))


def stream_deltas(
    http: httpx.Client, args: argparse.Namespace, progress: Bar | None = None
) -> Iterator[str]:
    """The text deltas of a streamed transcript or chat completion, as they arrive."""
    request = chat_request(args) if args.context is not None else transcription_request(args)
    lines = 0  # --multichannel: the channels' pieces printed, a line each
    with http.stream("POST", **request) as response:
        check(response, bool(args.api_key))
        for data in sse_data(response, progress):
            if data == "[DONE]":
                return
            event = json.loads(data)
            if "error" in event:
                error = event["error"]
                raise Failure(str(error.get("message") if isinstance(error, dict) else error))
            if event.get("type") == "transcript.text.delta" and not args.multichannel:
                yield str(event["delta"])
            elif event.get("type") == "transcript.text.segment":  # the channels talk at once
                before = "\n" if lines else ""
                yield f"{before}[{event['speaker']}] {event['text']}"
                lines += 1
            elif event.get("type") == "transcript.text.done":
                return
            elif event.get("choices"):
                yield str(event["choices"][0].get("delta", {}).get("content") or "")
    raise Failure("the stream ended before the transcript was done")


def print_stream(deltas: Iterator[str]) -> None:
    """Each delta as it comes, then one newline (also after a partial text, before an error)."""
    written = done = False
    try:
        for delta in deltas:
            sys.stdout.write(delta)
            sys.stdout.flush()
            written = written or bool(delta)
        done = True
    finally:
        if written or done:
            print()


def batch_job(args: argparse.Namespace) -> asr_batch.Job:
    """--batch: each line's body is the form a single file's request sends, as JSON."""
    options: dict[str, Any] = {"model": args.model, "response_format": args.format}
    if args.language:
        options["language"] = args.language.code
    if args.context is not None:
        options["prompt"] = args.context  # the form's context, where one file goes to chat
    if args.speakers:
        options |= {"min_speakers": args.speakers, "max_speakers": args.speakers}
    if args.multichannel:
        options["multichannel"] = True
    endpoint = "translations" if args.translate else "transcriptions"
    return asr_batch.Job(
        folder=Path(args.batch),
        endpoint=f"/v1/audio/{endpoint}",
        options=options,
        recursive=args.recursive,
        wait=args.wait,
        progress=args.progress,
    )


def transcribe(http: httpx.Client, args: argparse.Namespace) -> None:
    if args.batch is not None:
        try:
            asr_batch.transcribe_folder(
                http, batch_job(args), lambda response: explain(response, bool(args.api_key))
            )
        except asr_batch.Failure as exc:
            raise Failure(str(exc)) from exc
        return
    if args.realtime:
        asyncio.run(realtime(args))
        return
    if args.stream:
        print_stream(stream_deltas(http, args))
        return
    if args.progress:
        bar = Bar()
        try:
            text = "".join(stream_deltas(http, args, bar))
        finally:
            bar.end()
        print(text)
        return
    if args.align:
        request = alignment_request(args)
    elif args.context is not None:
        request = chat_request(args)
    else:
        request = transcription_request(args)
    response = http.post(**request)
    check(response, bool(args.api_key))
    text = render(response, args)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


REALTIME_RATE = 24000  # what OpenAI's Realtime API takes
CHUNK_SECONDS = 0.1  # one append per 100 ms, as a microphone buffer would
TAIL_SECONDS = 1.5  # silence after the file, so the server's VAD ends the last utterance


def pcm_chunks(path: str) -> Iterator[bytes]:
    """The file as 24 kHz mono 16-bit PCM, CHUNK_SECONDS at a time, then TAIL_SECONDS of
    silence."""
    try:
        import av
    except ImportError:
        raise Failure("--realtime needs PyAV to decode the file: pip install av") from None
    size = int(REALTIME_RATE * CHUNK_SECONDS) * 2
    pending = b""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=REALTIME_RATE)
    try:
        with av.open(path) as container:
            for frame in container.decode(audio=0):
                for out in resampler.resample(frame):
                    pending += bytes(out.planes[0])[: out.samples * 2]
                while len(pending) >= size:
                    yield pending[:size]
                    pending = pending[size:]
    except av.FFmpegError as exc:
        raise Failure(f"cannot decode {path}: {exc}") from exc
    for out in resampler.resample(None):
        pending += bytes(out.planes[0])[: out.samples * 2]
    yield pending + bytes(int(REALTIME_RATE * TAIL_SECONDS) * 2)


def realtime_session(args: argparse.Namespace) -> dict[str, Any]:
    transcription: dict[str, Any] = {"model": args.model}
    if args.language:
        transcription["language"] = args.language.code
    if args.context is not None:
        transcription["prompt"] = args.context
    audio = {
        "format": {"type": "audio/pcm", "rate": REALTIME_RATE},
        "transcription": transcription,
        "turn_detection": {"type": "server_vad"},
    }
    return {
        "type": "session.update",
        "session": {"type": "transcription", "audio": {"input": audio}},
    }


async def realtime(args: argparse.Namespace) -> None:
    """Play the file to the Realtime API in real time; print each utterance as it comes."""
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, WebSocketException
    except ImportError:
        raise Failure("--realtime needs websockets: pip install websockets") from None
    url = args.url.replace("http", "ws", 1) + "/v1/realtime?intent=transcription"
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    try:
        async with connect(url, additional_headers=headers, open_timeout=10) as ws:
            await ws.send(json.dumps(realtime_session(args)))
            sender = asyncio.create_task(_play(ws, args.file))
            try:
                await _print_transcripts(ws, sender)
            finally:
                sender.cancel()
    except InvalidStatus as exc:
        body = bytes(exc.response.body or b"")  # websockets gives a bytearray
        response = httpx.Response(exc.response.status_code, content=body)
        raise Failure(explain(response, bool(args.api_key))) from exc
    except (OSError, WebSocketException) as exc:
        raise Failure(f"the Realtime session with {args.url} failed: {exc}") from exc


async def _play(ws: Any, path: str) -> None:
    start = asyncio.get_running_loop().time()
    for index, chunk in enumerate(pcm_chunks(path)):
        audio = base64.b64encode(chunk).decode()
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
        wake = start + (index + 1) * CHUNK_SECONDS
        await asyncio.sleep(max(0.0, wake - asyncio.get_running_loop().time()))
    # An update that changes nothing: the server answers it after every event the audio caused
    await ws.send(json.dumps({"type": "session.update", "session": {"type": "transcription"}}))


async def _print_transcripts(ws: Any, sender: asyncio.Task[None]) -> None:
    """Deltas as they come, a newline after each utterance; done once the server has seen the
    whole file (its answer to `_play`'s closing update) and every utterance has its text."""
    updates = 0  # the answer to the session's first update, then the one to the closing one
    pending: set[str] = set()
    while updates < 2 or pending:
        if sender.done():
            sender.result()  # the file could not be read: raise that
            message = await ws.recv()
        else:
            receiving = asyncio.ensure_future(ws.recv())
            await asyncio.wait({receiving, sender}, return_when=asyncio.FIRST_COMPLETED)
            receiving.cancel()  # no-op if it is done; websockets' recv() loses nothing
            try:
                message = await receiving
            except asyncio.CancelledError:
                continue  # the sender is done: from now on, just receive
        event = json.loads(message)
        kind = event.get("type", "")
        if kind == "session.updated":
            updates += 1
        elif kind == "input_audio_buffer.committed":
            pending.add(event["item_id"])
        elif kind.endswith("input_audio_transcription.delta"):
            sys.stdout.write(event["delta"])
            sys.stdout.flush()
        elif kind.endswith("input_audio_transcription.completed"):
            pending.discard(event["item_id"])
            print()
        elif kind.endswith("input_audio_transcription.failed"):
            pending.discard(event["item_id"])
            print(f"test-asr: an utterance failed: {event['error']['message']}", file=sys.stderr)
        elif kind == "error":
            raise Failure(str(event["error"]["message"]))


def start_hint(url: str) -> str:
    port = urlsplit(url).port
    return "python server.py" + (f" --port {port}" if port and port != 8000 else "")


def run(args: argparse.Namespace) -> None:
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    timeout = httpx.Timeout(args.timeout, connect=min(args.timeout, 10.0))
    try:
        with httpx.Client(base_url=args.url, headers=headers, timeout=timeout) as http:
            transcribe(http, args)
    except httpx.ConnectError as exc:
        raise Failure(
            f"cannot reach {args.url}: is the server running? "
            f"(start it with: {start_hint(args.url)} --model Qwen/Qwen3-ASR-1.7B)"
        ) from exc
    except httpx.TimeoutException as exc:
        raise Failure(
            f"no answer from {args.url} within {args.timeout:g} s (see --timeout)"
        ) from exc
    except httpx.HTTPError as exc:
        raise Failure(f"the request to {args.url} failed: {exc}") from exc
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise Failure(f"unexpected answer from {args.url}: {exc!r}") from exc


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except Failure as exc:
        print(f"test-asr: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
