// fstcrf serve's page: the text or CoNLL lines typed in go to the JSON API
// (POST v1/models/NAME/tag with "view": true), and the document view the answer
// holds, rendered by the server as `fstcrf view` renders it, is shown below the form.
// Each chunk's cell carries data-type, data-first, data-last and data-probability.
//
// The correction loop: a person corrects chunks on the view (editor.js); after each
// correction the same input is decoded again under all of them (corrections.js turns
// them into the request's "constraints"), chunks below the threshold are flagged for
// checking, and the answer's partial_labels (the corrected sentences as training
// data) can be downloaded (download.js). `window.page` holds the state: the models,
// the last request and answer (`last`), the count of answers shown (`answers`) and
// whether a request is under way (`busy`).

import {Api} from "./api.js";
import {Corrections} from "./corrections.js";
import {saveText, trainCommand} from "./download.js";
import {Editor} from "./editor.js";

const DOWNLOAD_NAME = "corrections.txt";

const $ = (id) => document.getElementById(id);

const page = {
  models: {}, // name -> its description from GET v1/models
  input: null, // {model, kind, text, decode}: what the last press of Tag sent
  last: null, // {model, body, answer} of the last answer shown
  answers: 0,
  busy: false,
  corrections: new Corrections(),
};
window.page = page;

const api = new Api($("token"));

const editor = new Editor({
  view: $("view"),
  panel: $("editor"),
  corrections: page.corrections,
  onCorrect: (sentence, ...corrections) =>
    correct(sentence, () => corrections.forEach((c) => page.corrections.add(sentence, c))),
  onWithdraw: (sentence, correction) => correct(sentence, () => page.corrections.withdraw(sentence, correction)),
});

function showStatus(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(isError));
}

function setBusy(busy) {
  page.busy = busy;
  document.body.dataset.busy = String(busy);
  $("submit").disabled = busy;
}

function threshold() {
  const value = Number($("threshold").value);
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 0.5;
}

// The body of a request for `input` (default the last one), under the corrections made
// so far when it is the last one.
function requestBody(input = page.input) {
  const {kind, text, decode} = input;
  const body = {[kind]: text, view: true, low_confidence: threshold(), partial_labels: true};
  if (decode) body.decode = decode;
  if (input !== page.input) return body;
  const count = page.last && page.last.model === page.input.model ? page.last.answer.results.length : 0;
  const constraints = page.corrections.constraints(count);
  if (constraints) body.constraints = constraints;
  return body;
}

// Whether an answer holds what the page shows (a proxy or a truncated body may not).
function readable(answer) {
  return (
    typeof answer.html === "string" &&
    Array.isArray(answer.results) &&
    answer.partial_labels !== null &&
    typeof answer.partial_labels === "object" &&
    Array.isArray(answer.partial_labels.sentences)
  );
}

function summary(answer) {
  const sentences = answer.results.length;
  const chunks = answer.results.reduce((count, result) => count + result.entities.length, 0);
  const flagged = editor.toCheck().length;
  const corrected = page.corrections.size;
  return (
    `${sentences} sentence${sentences === 1 ? "" : "s"}, ${chunks} chunks; ` +
    `${flagged} below ${threshold()} to check; ${corrected} correction${corrected === 1 ? "" : "s"}`
  );
}

function showAnswer(body, answer) {
  if (!readable(answer)) throw new Error("the server's answer could not be read");
  const model = page.models[page.input.model];
  page.last = {model: page.input.model, body, answer};
  $("view").innerHTML = answer.html; // the server's view, every text in it escaped
  editor.show(model, answer);
  const data = answer.partial_labels;
  $("download").disabled = data.sentences.length === 0;
  $("train-command").textContent = data.sentences.length ? trainCommand(model, data, DOWNLOAD_NAME) : "";
  $("next-check").disabled = editor.toCheck().length === 0;
  page.answers += 1;
  showStatus(summary(answer));
}

// Decode the last input again (after a correction, or with a new threshold).
async function decodeAgain() {
  const body = requestBody();
  setBusy(true);
  try {
    showAnswer(body, await api.tag(page.input.model, body));
  } finally {
    setBusy(false);
  }
}

// Apply a change to the corrections of a sentence and decode again; undo it if the
// server refuses. The focus goes back to the sentence (the view is drawn anew).
async function correct(sentence, change) {
  if (page.busy || page.input === null) return;
  const before = page.corrections.snapshot();
  change();
  try {
    await decodeAgain();
  } catch (error) {
    page.corrections.restore(before);
    showStatus(`the correction was not applied: ${error.message}`, true);
  }
  editor.focusSentence(sentence);
}

// Tag the form's input afresh. Until the answer comes, the last input, its view and
// its corrections stay as they were: a refused request loses nothing.
async function submit(event) {
  event.preventDefault();
  if (page.busy) return;
  const input = {
    model: $("model").value,
    kind: document.querySelector('input[name="input"]:checked').value,
    text: $("input").value,
    decode: $("decode").value,
  };
  if (!input.model) {
    showStatus("no model to tag with: the server listed none (does it need the bearer token?)", true);
    return;
  }
  if (!input.text.trim()) {
    showStatus("nothing to tag: type or paste text, or CoNLL lines", true);
    return;
  }
  const body = requestBody(input);
  showStatus("tagging…");
  setBusy(true);
  try {
    const answer = await api.tag(input.model, body);
    if (!readable(answer)) throw new Error("the server's answer could not be read");
    page.input = input;
    page.corrections.clear();
    page.last = null;
    showAnswer(body, answer);
  } catch (error) {
    const kept = page.last ? "; the view below is still the last answer" : "";
    showStatus(`${error.message}${kept}`, true);
  } finally {
    setBusy(false);
  }
}

async function changeThreshold() {
  if (page.input === null || page.busy) return;
  try {
    await decodeAgain();
  } catch (error) {
    showStatus(error.message, true);
  }
}

function download() {
  if (page.last) saveText(DOWNLOAD_NAME, page.last.answer.partial_labels.conll);
}

function describeModel() {
  const model = page.models[$("model").value];
  $("model-kind").textContent = model
    ? `${model.kind}; reads ${model.columns.join(", ")}; predicts ${model.predicts.join(", ")}`
    : "";
}

async function loadModels() {
  try {
    const {models} = await api.models();
    $("model").replaceChildren(...models.map((model) => new Option(model.name, model.name)));
    page.models = Object.fromEntries(models.map((model) => [model.name, model]));
    describeModel();
    showStatus("");
  } catch (error) {
    showStatus(`cannot list the models: ${error.message}`, true);
  }
}

// The CoNLL lines the server opens the page with (`fstcrf view --edit`), tagged at
// once, under its heading and threshold.
async function openDocument() {
  const opened = await api.document().catch(() => ({}));
  if (opened.conll === undefined || !Object.keys(page.models).length) return;
  if (opened.title) document.title = document.querySelector("h1").textContent = opened.title;
  if (Number.isFinite(opened.low_confidence)) $("threshold").value = String(opened.low_confidence);
  $("input").value = opened.conll;
  document.querySelector('input[name="input"][value="conll"]').checked = true;
  $("tag-form").requestSubmit();
}

$("tag-form").addEventListener("submit", submit);
$("model").addEventListener("change", describeModel);
$("token").addEventListener("change", loadModels);
$("threshold").addEventListener("change", changeThreshold);
$("download").addEventListener("click", download);
$("next-check").addEventListener("click", () => editor.selectNextToCheck());
setBusy(false);
loadModels().then(openDocument);
