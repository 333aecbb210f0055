// fstcrf serve's page: the text or CoNLL lines typed in go to the JSON API
// (POST v1/models/NAME/tag with "view": true), and the document view the answer
// holds, rendered by the server as `fstcrf view` renders it, is shown below the form.
// Each chunk's cell carries data-type, data-first, data-last and data-probability.
//
// The correction loop: a person corrects chunks on the view (editor.js); after each
// correction the same input is decoded again under all of them (corrections.js turns
// them into the request's "constraints"), chunks below the threshold are flagged for
// checking, and the answer's partial_labels (the corrected sentences as training
// data) can be downloaded (download.js). A correction (or a withdrawal, or a new
// threshold) made while a request is under way waits for its answer, and every change
// waiting then goes in one request. `window.page` holds the state: the models, the last
// request and answer (`last`), the count of answers shown (`answers`), whether a request
// is under way (`busy`), the corrections, the changes to them not sent yet (`waiting`)
// and the threshold chosen (`threshold`).

import {Api} from "./api.js";
import {Corrections} from "./corrections.js";
import {saveText, trainCommand} from "./download.js";
import {Editor} from "./editor.js";

const DOWNLOAD_NAME = "corrections.txt";
const DEFAULT_THRESHOLD = 0.5; // the server's default low_confidence

const $ = (id) => document.getElementById(id);

const page = {
  models: {}, // name -> its description from GET v1/models
  input: null, // {model, kind, text, decode}: what the last press of Tag sent
  last: null, // {model, body, answer} of the last answer shown
  answers: 0,
  busy: false,
  corrections: new Corrections(),
  waiting: [], // {sentence, change}: changes to the corrections made (and applied) since the last request was sent
  threshold: DEFAULT_THRESHOLD, // the one chosen (the field's value when it last changed), sent as low_confidence
};
window.page = page;

let tagging = false; // whether the request under way tags a new input (Tag), not the last one again
let accepted = page.corrections.snapshot(); // the corrections the last answer shown was decoded under

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

// The threshold the field holds, in [0, 1]; the default when it is empty or not a number.
function threshold() {
  const value = $("threshold").valueAsNumber;
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : DEFAULT_THRESHOLD;
}

// The threshold chosen, and the field showing it (an empty field shows the default it means).
function chooseThreshold(value) {
  page.threshold = value;
  $("threshold").value = String(value);
}

// The body of a request for `input` (default the last one), under the corrections made
// so far when it is the last one.
function requestBody(input = page.input) {
  const {kind, text, decode} = input;
  const body = {[kind]: text, view: true, low_confidence: page.threshold, partial_labels: true};
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

function summary(body, answer) {
  const sentences = answer.results.length;
  const chunks = answer.results.reduce((count, result) => count + result.entities.length, 0);
  const flagged = editor.toCheck().length;
  const corrected = page.corrections.size;
  return (
    `${sentences} sentence${sentences === 1 ? "" : "s"}, ${chunks} chunks; ` +
    `${flagged} below ${body.low_confidence} to check; ${corrected} correction${corrected === 1 ? "" : "s"}` +
    leftOut(answer)
  );
}

// What the download lacks: the corrected sentences CoNLL lines cannot hold (a token
// "-DOCSTART-", say), as the answer's partial_labels.left_out names them.
function leftOut(answer) {
  const missing = Array.isArray(answer.partial_labels.left_out) ? answer.partial_labels.left_out : [];
  if (missing.length === 0) return "";
  const named = missing.map((item) => `${item.sentence} (token ${item.token}: ${item.reason})`).join("; ");
  return `; the download lacks sentence${missing.length === 1 ? "" : "s"} ${named}`;
}

function showAnswer(body, answer) {
  if (!readable(answer)) throw new Error("the server's answer could not be read");
  page.last = {model: page.input.model, body, answer};
  const closed = draw();
  page.answers += 1;
  showStatus(closed ? `${summary(body, answer)}; ${closed}` : summary(body, answer));
}

// Draw the last answer under the corrections: the view, and what can be done with them.
// What the editor says it closed (a selection no longer shown), or null.
function draw() {
  const {answer} = page.last;
  const model = page.models[page.last.model];
  $("view").innerHTML = answer.html; // the server's view, every text in it escaped
  const closed = editor.show(model, answer);
  const data = answer.partial_labels;
  $("download").disabled = data.sentences.length === 0;
  $("train-command").textContent = data.sentences.length ? trainCommand(model, data, DOWNLOAD_NAME) : "";
  $("next-check").disabled = editor.toCheck().length === 0;
  return closed;
}

// Whether the answer shown is not decoded under the corrections and threshold chosen.
function changed() {
  return page.waiting.length > 0 || (page.last !== null && page.threshold !== page.last.body.low_confidence);
}

// What a refused request had changed, which is undone.
function notApplied(changes, body) {
  const what = [];
  if (changes.length) what.push(changes.length === 1 ? "the correction" : `the ${changes.length} corrections`);
  if (body.low_confidence !== page.last.body.low_confidence) what.push(`the threshold ${body.low_confidence}`);
  return `${what.join(" and ")} ${what.length === 1 && changes.length < 2 ? "was" : "were"} not applied`;
}

// Decode the last input again until the answer shown is decoded under all the
// corrections and the threshold chosen: the changes made while a request is under way
// go together in the next. A request the server refuses undoes its corrections and
// puts back the threshold it sent (unless chosen again since), saying why; the changes
// made since it was sent stay, and go next. `problem`: an error to say at the end, if
// the page decodes again.
async function decodeAgain(problem = null) {
  if (page.busy || page.input === null || !changed()) return;
  setBusy(true);
  try {
    while (changed()) {
      const changes = page.waiting.splice(0);
      const body = requestBody();
      const sent = page.corrections.snapshot();
      try {
        showAnswer(body, await api.tag(page.input.model, body));
        accepted = sent;
      } catch (error) {
        problem = `${notApplied(changes, body)}: ${error.message}`;
        page.corrections.restore(accepted);
        for (const {change} of page.waiting) change();
        if (page.threshold === body.low_confidence) chooseThreshold(page.last.body.low_confidence);
        draw();
      }
      if (changes.length) editor.focusSentence(changes[changes.length - 1].sentence);
    }
  } finally {
    setBusy(false);
  }
  if (problem) showStatus(problem, true);
}

// Apply a change to the corrections of a sentence and decode again, or, while a
// request is under way, once its answer is shown. The focus goes back to the sentence
// (the view is drawn anew).
function correct(sentence, change) {
  if (page.input === null) return;
  if (tagging) {
    showStatus("a new input is being tagged: correct it once it is shown", true);
    return;
  }
  change();
  page.waiting.push({sentence, change});
  const count = page.waiting.length;
  if (page.busy) showStatus(`decoding again; ${count} correction${count === 1 ? " waits" : "s wait"} for this answer`);
  decodeAgain();
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
  tagging = true;
  let problem = null;
  try {
    const answer = await api.tag(input.model, body);
    if (!readable(answer)) throw new Error("the server's answer could not be read");
    page.input = input;
    page.corrections.clear();
    accepted = page.corrections.snapshot();
    page.last = null;
    editor.select(null); // a selection on the last input
    showAnswer(body, answer);
  } catch (error) {
    const kept = page.last ? "; the view below is still the last answer" : "";
    problem = `${error.message}${kept}`;
    showStatus(problem, true);
  } finally {
    tagging = false;
    setBusy(false);
  }
  decodeAgain(problem); // a threshold chosen while tagging
}

// A threshold typed in: decoded again with it now, or once the answer under way is shown.
function changeThreshold() {
  const before = page.threshold;
  chooseThreshold(threshold());
  if (page.busy && !tagging && page.threshold !== before) {
    showStatus(`decoding again; the threshold ${page.threshold} waits for this answer`);
  }
  decodeAgain();
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

// The models the server lists (again when the token changes), the one chosen kept if listed.
async function loadModels() {
  try {
    const {models} = await api.models();
    const chosen = $("model").value;
    $("model").replaceChildren(...models.map((model) => new Option(model.name, model.name)));
    page.models = Object.fromEntries(models.map((model) => [model.name, model]));
    const kept = models.some((model) => model.name === chosen);
    if (kept) $("model").value = chosen;
    describeModel();
    showStatus(chosen && !kept ? `the model ${chosen} is not listed any more` : "", chosen && !kept);
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
  if (Number.isFinite(opened.low_confidence)) chooseThreshold(opened.low_confidence);
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
chooseThreshold(threshold());
loadModels().then(openDocument);
