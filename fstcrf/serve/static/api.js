// The JSON API of fstcrf serve, called with the bearer token typed into the page
// (when there is one). Every path is relative, so the page works under a prefix.

export class ApiError extends Error {
  constructor(status, answer) {
    const field = answer.field ? ` (${answer.field})` : "";
    super(`${status}: ${answer.error}${field}`);
    this.field = answer.field;
  }
}

export class Api {
  constructor(tokenInput) {
    this.tokenInput = tokenInput;
  }

  headers(json) {
    const headers = json ? {"Content-Type": "application/json"} : {};
    const token = this.tokenInput.value.trim();
    if (token) headers["Authorization"] = "Bearer " + token;
    return headers;
  }

  async call(method, path, body) {
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new Error("cannot reach the server (is fstcrf serve still running?)");
    }
    let answer;
    try {
      answer = await response.json();
    } catch {
      // a proxy's page or a cut-off body: an error says its status; an answer cannot be used
      if (response.ok) throw new Error("the server's answer could not be read");
      answer = {error: response.statusText || "no message"};
    }
    if (!response.ok) throw new ApiError(response.status, answer);
    if (answer === null || typeof answer !== "object") throw new Error("the server's answer could not be read");
    return answer;
  }

  models() {
    return this.call("GET", "v1/models");
  }

  document() {
    return this.call("GET", "v1/document");
  }

  tag(model, body) {
    return this.call("POST", `v1/models/${encodeURIComponent(model)}/tag`, body);
  }
}
