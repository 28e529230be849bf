// Batch jobs from the File view: the chosen file transcribed through the server's Files and
// Batch APIs, so the work outlives this page, its connection and a restart of the server.
// A job is followed live, listed with the recent ones, and reopened from there.

import { APIError, DIARIZE, getJSON, postJSON, upload } from "./api.js";
import { showAnswer } from "./answer.js";
import { Segments } from "./segments.js";

const ENDPOINT = "/v1/audio/transcriptions";
const ENDED = new Set(["completed", "failed", "expired", "cancelled"]);
const POLL_MS = 1000;

export function setUpJobs(page) {
  return new Jobs(page);
}

// The line's body: the form's fields as JSON, asking for the segments' times (and speakers
// when the diarizing model is chosen; words too when the server has an aligner).
function lineBody(file, options, timed) {
  const diarize = options.model === DIARIZE;
  const body = { file, response_format: diarize ? "diarized_json" : "verbose_json" };
  if (options.model) body.model = options.model;
  if (options.language) body.language = options.language;
  if (options.prompt) body.prompt = options.prompt;
  if (options.keywords.length) body.keywords = options.keywords;
  if (!diarize) body.timestamp_granularities = timed ? ["segment", "word"] : ["segment"];
  return body;
}

function named(batch) {
  return batch.metadata?.filename || batch.id;
}

function progressWords(batch) {
  const counts = batch.request_counts || { total: 0, completed: 0, failed: 0 };
  if (!counts.total) return `${named(batch)}: ${batch.status}`;
  const done = counts.completed + counts.failed;
  const failed = counts.failed ? `, ${counts.failed} failed` : "";
  return `${named(batch)}: ${batch.status}, ${done} of ${counts.total} done${failed}`;
}

class Jobs {
  constructor(page) {
    const $ = (id) => document.getElementById(id);
    this.page = page;
    this.view = {
      box: $("job"),
      status: $("job-status"),
      bar: $("job-progress"),
      error: $("job-error"),
      result: $("job-result"),
      transcript: $("job-transcript"),
      downloads: $("job-downloads"),
      segments: new Segments($("job-segments"), $("job-segments-note"), $("job-player")),
    };
    this.recent = $("jobs-recent");
    this.list = $("jobs-list");
    this.listNote = $("jobs-note");
    this.local = new Map(); // batch id → the File picked here, played without fetching it back
    this.shown = null; // the id of the batch on show, followed while it runs
    this.recent.addEventListener("toggle", () => this.recent.open && this.refresh());
    $("jobs-refresh").addEventListener("click", () => this.refresh());
  }

  async submit(file, options) {
    const id = this.begin(null);
    try {
      this.say(`${file.name}: uploading`);
      const audio = await upload(file, file.name, "user_data");
      const line = { custom_id: "playground", method: "POST", url: ENDPOINT };
      line.body = lineBody(audio.id, options, this.page.aligner());
      const jsonl = new Blob([`${JSON.stringify(line)}\n`], { type: "application/jsonl" });
      const input = await upload(jsonl, "input.jsonl", "batch");
      const batch = await postJSON("/v1/batches", {
        input_file_id: input.id,
        endpoint: ENDPOINT,
        completion_window: "24h",
        metadata: { filename: file.name.slice(0, 512) },
      });
      this.local.set(batch.id, file);
      if (this.recent.open) this.refresh();
      // followed while the form is free again for another file
      if (this.shown === id) this.follow(batch).catch((caught) => this.fail(caught));
    } catch (caught) {
      this.fail(caught);
    }
  }

  async open(batchId) {
    this.begin(batchId);
    try {
      await this.follow(await getJSON(`/v1/batches/${batchId}`));
    } catch (caught) {
      this.fail(caught);
    }
  }

  // A fresh view for a job; the one followed before is let go.
  begin(batchId) {
    const { box, error, result, segments } = this.view;
    this.shown = batchId || Symbol("uploading");
    box.hidden = false;
    result.hidden = true;
    error.textContent = "";
    segments.clear();
    segments.load(null);
    this.say("");
    return this.shown;
  }

  say(words, batch = null) {
    const { status, bar } = this.view;
    status.textContent = words;
    status.dataset.status = batch?.status || "";
    const counts = batch?.request_counts;
    if (counts?.total) {
      bar.max = counts.total;
      bar.value = counts.completed + counts.failed;
    } else if (ENDED.has(batch?.status)) {
      bar.value = 0; // ended before its lines were counted (its input failed validation)
    } else {
      bar.removeAttribute("value"); // indeterminate until the lines are counted
    }
  }

  // The batch polled until it ends (a server that cannot be reached is asked again), then shown.
  async follow(batch) {
    const id = batch.id;
    this.shown = id;
    while (!ENDED.has(batch.status)) {
      this.say(progressWords(batch), batch);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (this.shown !== id) return;
      try {
        batch = await getJSON(`/v1/batches/${id}`);
        this.view.error.textContent = "";
      } catch (caught) {
        if (!(caught instanceof APIError) || (caught.status && caught.status < 500)) throw caught;
        this.view.error.textContent = `${caught.message} Asking again…`;
      }
      if (this.shown !== id) return;
    }
    this.say(progressWords(batch), batch);
    await showAnswer(this.view, batch, this.local.get(id));
    if (this.recent.open) this.refresh();
  }

  fail(caught) {
    this.view.error.textContent = caught instanceof APIError ? caught.message : String(caught);
    this.page.refused(caught);
  }

  async refresh() {
    this.listNote.textContent = "";
    try {
      const batches = (await getJSON("/v1/batches?limit=20")).data;
      const audio = batches.filter((batch) => batch.endpoint.startsWith("/v1/audio/"));
      this.list.replaceChildren(...audio.map((batch) => this.entry(batch)));
      if (!audio.length) this.listNote.textContent = "No audio jobs yet.";
    } catch (caught) {
      this.listNote.textContent = caught instanceof APIError ? caught.message : String(caught);
      this.page.refused(caught);
    }
  }

  entry(batch) {
    const item = document.createElement("li");
    item.dataset.id = batch.id;
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = named(batch);
    button.addEventListener("click", () => this.open(batch.id));
    const status = document.createElement("span");
    status.className = "job-state";
    status.dataset.status = batch.status;
    status.textContent = batch.status;
    const when = document.createElement("time");
    when.dateTime = new Date(batch.created_at * 1000).toISOString();
    when.textContent = new Date(batch.created_at * 1000).toLocaleString();
    item.append(button, " ", status, " ", when);
    return item;
  }
}
