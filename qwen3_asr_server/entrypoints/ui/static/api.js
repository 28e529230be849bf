// The page's client of the server's public API: the key, requests, errors in plain words.

const KEY = "qwen3-asr-server.api-key";
// OpenAI's diarizing model: the server lists it when it labels speakers
export const DIARIZE = "gpt-4o-transcribe-diarize";

export class APIError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The key lives in this tab's sessionStorage, gone when the tab closes; only a user who asks
// to be remembered has it kept in localStorage, across visits.
export function storedKey() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
}

export function storeKey(key, remember) {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
  if (key) (remember ? localStorage : sessionStorage).setItem(KEY, key);
}

function headers() {
  const key = storedKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

// What an error answer means for the person at the page.
export async function explain(response) {
  let error = {};
  try {
    error = (await response.json()).error || {};
  } catch {
    // not OpenAI's shape (a proxy in between): the status says enough
  }
  const retry = response.headers.get("retry-after");
  const again = retry ? ` Try again in ${retry} s.` : "";
  const words = {
    401: storedKey()
      ? "The server refused this API key (401). Enter the right one above."
      : "This server needs an API key (401). Enter it above.",
    413: `The file is too large for this server (413): ${error.message || "over its upload limit"}`,
    429: `The server is busy (429).${again || " Try again in a moment."}`,
    503: `The server cannot transcribe right now (503): ${error.message || "it is not ready"}.${again}`,
  }[response.status];
  return new APIError(
    response.status,
    words || `${error.message || response.statusText} (${response.status})`,
    error.code,
  );
}

export async function call(path, init = {}) {
  let response;
  try {
    response = await fetch(path, { ...init, headers: { ...headers(), ...(init.headers || {}) } });
  } catch {
    throw new APIError(0, "The server cannot be reached.");
  }
  if (!response.ok) throw await explain(response);
  return response;
}

function transcriptionForm(file, options, extra = {}) {
  const form = new FormData();
  form.append("file", file);
  if (options.model) form.append("model", options.model);
  if (options.language) form.append("language", options.language);
  if (options.prompt) form.append("prompt", options.prompt);
  for (const keyword of options.keywords || []) form.append("keywords[]", keyword);
  for (const [name, value] of Object.entries(extra)) {
    for (const each of [].concat(value)) form.append(name, each);
  }
  return form;
}

export function transcribe(file, options, extra) {
  const body = transcriptionForm(file, options, extra);
  return call("/v1/audio/transcriptions", { method: "POST", body });
}

// OpenAI's transcription stream: `data: {json}` events, each given to `onEvent`.
export async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let end;
    while ((end = pending.indexOf("\n\n")) >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

export function clock(seconds) {
  const minutes = Math.floor(seconds / 60);
  const rest = (seconds - minutes * 60).toFixed(1).padStart(4, "0");
  return `${minutes}:${rest}`;
}

export async function getJSON(path) {
  return (await call(path)).json();
}

export async function postJSON(path, value) {
  const init = { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(value) };
  return (await call(path, init)).json();
}

// A file kept by the server (Files API): a recording (`user_data`) or a batch's input (`batch`).
export async function upload(blob, name, purpose) {
  const form = new FormData();
  form.append("purpose", purpose);
  form.append("file", blob, name);
  return (await call("/v1/files", { method: "POST", body: form })).json();
}
