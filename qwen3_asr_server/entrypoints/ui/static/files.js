// The File view: a file streamed to text, then its segments (and words) against its playback.

import { APIError, DIARIZE, readEvents, transcribe } from "./api.js";
import { Segments } from "./segments.js";

const EXTENSIONS = { srt: "srt", vtt: "vtt", text: "txt", verbose_json: "json", json: "json" };
const TYPES = { srt: "application/x-subrip", vtt: "text/vtt", text: "text/plain" };

// `jobs` takes the file instead when "Run as a batch job" is ticked.
export function setUpFiles(page, jobs) {
  const form = document.getElementById("file-form");
  const input = document.getElementById("file");
  const drop = document.getElementById("drop");
  const error = document.getElementById("file-error");
  const result = document.getElementById("result");
  const transcript = document.getElementById("transcript");
  const player = document.getElementById("player");
  const list = document.getElementById("segments");
  const note = document.getElementById("segments-note");
  const download = document.getElementById("download");
  const downloadNote = document.getElementById("download-note");
  const submit = document.getElementById("transcribe");
  let run = null; // what the last transcription asked and got: {file, options, verbose}
  const segments = new Segments(list, note, player);

  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  for (const name of ["dragleave", "drop"]) {
    drop.addEventListener(name, () => drop.classList.remove("over"));
  }
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    if (event.dataTransfer.files.length) {
      input.files = event.dataTransfer.files;
      form.requestSubmit();
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = input.files[0];
    if (!file) return;
    const options = readOptions("file");
    if (document.getElementById("file-speakers").checked) options.model = DIARIZE;
    error.textContent = "";
    if (document.getElementById("file-job").checked) {
      result.hidden = submit.disabled = true;
      await jobs.submit(file, options);
      submit.disabled = false;
      return;
    }
    submit.disabled = download.disabled = true;
    result.hidden = false;
    transcript.textContent = "";
    transcript.setAttribute("aria-busy", "true");
    segments.clear();
    downloadNote.textContent = "";
    segments.load(file);
    try {
      await stream(file, options);
      transcript.setAttribute("aria-busy", "false");
      note.textContent = "Finding the segments…";
      const timed = page.aligner();
      const verbose = await (
        await transcribe(file, options, {
          response_format: "verbose_json",
          "timestamp_granularities[]": timed ? ["segment", "word"] : ["segment"],
        })
      ).json();
      run = { file, options, verbose };
      segments.show(verbose);
      download.disabled = false;
    } catch (caught) {
      error.textContent = caught instanceof APIError ? caught.message : String(caught);
      page.refused(caught);
    } finally {
      transcript.setAttribute("aria-busy", "false");
      submit.disabled = false;
    }
  });

  async function stream(file, options) {
    const response = await transcribe(file, options, { stream: "true" });
    await readEvents(response, (event) => {
      if (event.error) throw new APIError(0, event.error.message, event.error.code);
      if (event.type === "transcript.text.delta") transcript.textContent += event.delta;
      if (event.type === "transcript.text.done") transcript.textContent = event.text;
    });
  }

  download.addEventListener("click", async () => {
    if (!run) return;
    const format = document.getElementById("file-format").value;
    downloadNote.textContent = "";
    try {
      let content = JSON.stringify(run.verbose, null, 2);
      if (format !== "verbose_json") {
        const answer = await transcribe(run.file, run.options, { response_format: format });
        content = format === "json" ? JSON.stringify(await answer.json(), null, 2) : await answer.text();
      }
      const blob = new Blob([content], { type: TYPES[format] || "application/json" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = `${run.file.name.replace(/\.[^.]*$/, "") || "transcript"}.${EXTENSIONS[format]}`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      downloadNote.textContent = `Saved ${link.download}.`;
    } catch (caught) {
      downloadNote.textContent = caught instanceof APIError ? caught.message : String(caught);
      page.refused(caught);
    }
  });
}

// Language, prompt and keywords of a view's form (`file-` or `live-` fields).
export function readOptions(prefix) {
  const value = (name) => document.getElementById(`${prefix}-${name}`)?.value.trim() || "";
  return {
    language: value("language"),
    prompt: value("prompt"),
    keywords: value("keywords")
      .split(",")
      .map((keyword) => keyword.trim())
      .filter(Boolean),
  };
}
