// The Microphone view: live captions over OpenAI's Realtime API (transcription intent).

import { APIError, call, clock, storedKey } from "./api.js";
import { readOptions } from "./files.js";

const RATE = 24_000; // OpenAI's Realtime PCM rate
const APPEND_SAMPLES = RATE / 10; // 100 ms an append

export function setUpLive(page) {
  const form = document.getElementById("live-form");
  const toggle = document.getElementById("live-toggle");
  const error = document.getElementById("live-error");
  const vad = document.getElementById("vad");
  const captions = document.getElementById("captions");
  let live = null; // {socket, stream, context}

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (live) stop("Microphone off");
    else await start();
  });

  function state(name, words) {
    vad.dataset.state = name;
    vad.textContent = words;
  }

  async function start() {
    error.textContent = "";
    toggle.disabled = true;
    try {
      await call("/v1/models"); // a refused key is a 401 here, in words; a WebSocket only closes
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
      });
      const context = new AudioContext({ sampleRate: RATE });
      await context.audioWorklet.addModule("/ui/capture.js");
      const capture = new AudioWorkletNode(context, "capture");
      context.createMediaStreamSource(stream).connect(capture);
      const socket = open(readOptions("live"));
      live = { socket, stream, context };
      let pending = [];
      let count = 0;
      capture.port.onmessage = ({ data }) => {
        pending.push(data);
        count += data.length;
        if (count < APPEND_SAMPLES || socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ type: "input_audio_buffer.append", audio: pcm16(pending, count) }));
        pending = [];
        count = 0;
      };
      toggle.textContent = "Stop";
      state("silent", "Listening: silent");
    } catch (caught) {
      error.textContent =
        caught instanceof APIError ? caught.message : `The microphone could not be used: ${caught.message || caught}`;
      page.refused(caught);
      stop("Microphone off");
    } finally {
      toggle.disabled = false;
    }
  }

  function stop(words) {
    if (live) {
      live.socket.onclose = null;
      live.socket.close();
      for (const track of live.stream.getTracks()) track.stop();
      live.context.close();
      live = null;
    }
    toggle.textContent = "Start";
    state("off", words);
  }

  function open(options) {
    const key = storedKey();
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const protocols = ["realtime", ...(key ? [`openai-insecure-api-key.${key}`] : [])];
    const socket = new WebSocket(`${scheme}//${location.host}/v1/realtime?intent=transcription`, protocols);
    socket.onopen = () => {
      const transcription = { model: "gpt-4o-transcribe" };
      if (options.language) transcription.language = options.language;
      if (options.prompt) transcription.prompt = options.prompt;
      const input = {
        format: { type: "audio/pcm", rate: RATE },
        transcription,
        turn_detection: { type: "server_vad" },
      };
      socket.send(JSON.stringify({ type: "session.update", session: { type: "transcription", audio: { input } } }));
    };
    socket.onmessage = ({ data }) => handle(JSON.parse(data));
    socket.onclose = (event) => {
      stop("Microphone off");
      error.textContent = `The server closed the session (${event.code}${event.reason ? `: ${event.reason}` : ""}).`;
    };
    return socket;
  }

  function caption(itemId) {
    let item = captions.querySelector(`[data-item="${CSS.escape(itemId)}"]`);
    if (!item) {
      item = document.createElement("li");
      item.dataset.item = itemId;
      item.className = "partial";
      const time = document.createElement("span");
      time.className = "time";
      const text = document.createElement("span");
      text.className = "text";
      item.append(time, " ", text);
      captions.append(item);
    }
    return item;
  }

  function handle(event) {
    switch (event.type) {
      case "input_audio_buffer.speech_started":
        state("speaking", "Listening: speaking");
        caption(event.item_id).querySelector(".time").textContent = clock(event.audio_start_ms / 1000);
        break;
      case "input_audio_buffer.speech_stopped":
        state("silent", "Listening: silent");
        break;
      case "conversation.item.input_audio_transcription.delta":
        caption(event.item_id).querySelector(".text").textContent += event.delta;
        break;
      case "conversation.item.input_audio_transcription.completed": {
        const item = caption(event.item_id);
        item.querySelector(".text").textContent = event.transcript;
        item.className = event.transcript ? "done" : "empty";
        break;
      }
      case "conversation.item.input_audio_transcription.failed": {
        const item = caption(event.item_id);
        item.querySelector(".text").textContent = `(not transcribed: ${event.error?.message || "failed"})`;
        item.className = "failed";
        break;
      }
      case "error":
        error.textContent = event.error?.message || "The server reported an error.";
        break;
      default:
    }
  }
}

// Float32 blocks in -1..1 as base64 of 16-bit little-endian PCM.
function pcm16(blocks, count) {
  const bytes = new Uint8Array(count * 2);
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (const block of blocks) {
    for (const sample of block) {
      view.setInt16(at, Math.max(-1, Math.min(1, sample)) * 0x7fff, true);
      at += 2;
    }
  }
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
