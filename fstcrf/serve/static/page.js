"use strict";
// fstcrf serve's page: the text or CoNLL lines typed in go to the JSON API
// (POST v1/models/NAME/tag with "view": true), and the document view the answer
// holds, rendered by the server as `fstcrf view` renders it, is shown below the form.
// Each chunk's cell carries data-type, data-first, data-last and data-probability.
// The state of the last exchange (request and answer) is kept in `page.last`, for
// code that builds on it (e.g. corrections sent back with a new request).

const page = {
  models: {},   // name -> its description from GET v1/models
  last: null,   // {model, body, answer} of the last answer shown
};

const api = {
  headers(json) {
    const headers = json ? {"Content-Type": "application/json"} : {};
    const token = document.getElementById("token").value.trim();
    if (token) headers["Authorization"] = "Bearer " + token;
    return headers;
  },

  async call(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({error: response.statusText}));
    if (!response.ok) {
      const field = answer.field ? ` (${answer.field})` : "";
      throw new Error(`${response.status}: ${answer.error || response.statusText}${field}`);
    }
    return answer;
  },

  models() {
    return this.call("GET", "v1/models");
  },

  tag(model, body) {
    return this.call("POST", `v1/models/${encodeURIComponent(model)}/tag`, body);
  },
};

function showStatus(text, isError) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(isError));
}

function requestBody() {
  const kind = document.querySelector('input[name="input"]:checked').value;
  const body = {[kind]: document.getElementById("input").value, view: true};
  const decode = document.getElementById("decode").value;
  if (decode) body.decode = decode;
  return body;
}

function entityCount(answer) {
  return answer.results.reduce((count, result) => count + result.entities.length, 0);
}

function showAnswer(model, body, answer) {
  page.last = {model, body, answer};
  document.getElementById("view").innerHTML = answer.html;
  const sentences = answer.results.length;
  showStatus(`${sentences} sentence${sentences === 1 ? "" : "s"}, ${entityCount(answer)} entities`);
}

async function submit(event) {
  event.preventDefault();
  const model = document.getElementById("model").value;
  const body = requestBody();
  showStatus("tagging…");
  try {
    showAnswer(model, body, await api.tag(model, body));
  } catch (error) {
    showStatus(error.message, true);
  }
}

function describeModel() {
  const model = page.models[document.getElementById("model").value];
  document.getElementById("model-kind").textContent = model
    ? `${model.kind}; reads ${model.columns.join(", ")}; predicts ${model.predicts.join(", ")}`
    : "";
}

async function loadModels() {
  try {
    const {models} = await api.models();
    const select = document.getElementById("model");
    select.replaceChildren(...models.map((model) => new Option(model.name, model.name)));
    page.models = Object.fromEntries(models.map((model) => [model.name, model]));
    describeModel();
    showStatus("");
  } catch (error) {
    showStatus(`cannot list the models: ${error.message}`, true);
  }
}

document.getElementById("tag-form").addEventListener("submit", submit);
document.getElementById("model").addEventListener("change", describeModel);
document.getElementById("token").addEventListener("change", loadModels);
loadModels();
