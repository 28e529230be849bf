// A finished batch job's answer: its transcript by segment against the recording, and
// downloads of what the server wrote (the answer as JSON and as text, the batch's output).

import { call } from "./api.js";

async function firstLine(fileId) {
  const text = await (await call(`/v1/files/${fileId}/content`)).text();
  return { text, line: JSON.parse(text.split("\n")[0]) };
}

// The recording the job's line named, fetched back from the server for a job not started
// from this page; none once the server has let the file expire.
async function recording(batch) {
  try {
    const { line } = await firstLine(batch.input_file_id);
    return await (await call(`/v1/files/${line.body.file}/content`)).blob();
  } catch {
    return null;
  }
}

function link(label, content, type, filename) {
  const anchor = document.createElement("a");
  anchor.href = URL.createObjectURL(new Blob([content], { type }));
  anchor.download = filename;
  anchor.textContent = label;
  return anchor;
}

function offerDownloads(place, batch, answer, output) {
  for (const anchor of place.querySelectorAll("a")) URL.revokeObjectURL(anchor.href);
  const base = (batch.metadata?.filename || batch.id).replace(/\.[^.]*$/, "") || "transcript";
  const links =
    typeof answer === "string"
      ? [link("Text", answer, "text/plain", `${base}.txt`)]
      : [
          link("JSON", JSON.stringify(answer, null, 2), "application/json", `${base}.json`),
          link("Text", answer.text || "", "text/plain", `${base}.txt`),
        ];
  links.push(link("Batch output (JSONL)", output, "application/jsonl", `${base}.output.jsonl`));
  place.replaceChildren(...links);
}

// Why an ended batch has no answer to show, in its own words.
async function failure(batch) {
  if (batch.status === "failed") {
    return batch.errors?.data?.map((error) => error.message).join(" ") || "The batch failed.";
  }
  if (!batch.error_file_id) return `The batch ended ${batch.status} without an answer.`;
  const { line } = await firstLine(batch.error_file_id);
  return line.response?.body?.error?.message || line.error?.message || "The request failed.";
}

// `view`: the job's elements and its Segments; `local`: the File picked here, if it was.
export async function showAnswer(view, batch, local) {
  if (!batch.output_file_id) {
    view.error.textContent = await failure(batch);
    return;
  }
  const { text, line } = await firstLine(batch.output_file_id);
  const answer = line.response.body;
  view.result.hidden = false;
  view.transcript.textContent = typeof answer === "string" ? answer : answer.text || "";
  if (typeof answer === "object") view.segments.show(answer);
  offerDownloads(view.downloads, batch, answer, text);
  const played = local || (await recording(batch));
  view.segments.load(played);
  if (!played) view.segments.note.textContent += " The recording is no longer on the server.";
}
