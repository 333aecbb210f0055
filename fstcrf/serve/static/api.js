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
    const response = await fetch(path, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({error: response.statusText}));
    if (!response.ok) throw new ApiError(response.status, answer);
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
