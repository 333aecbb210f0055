// Corrections made on the document view. A click on a chunk of the top layer selects
// it: then retype it, remove it, or keep it as it is. A click on a token selects it,
// and a shift-click on another token of the same sentence extends the selection: then
// mark those tokens as a chunk of a type. Each action goes to `onCorrect(sentence,
// correction)`, and closes the selection. After each answer, `show` marks the corrected
// chunks and lists each sentence's corrections, each with a button that withdraws it
// (`onWithdraw`); a selection made while the answer was awaited stays open where it is
// still shown. Every text shown is set as text, never as markup, and each token and
// type is isolated from the text around it (a right-to-left override in a token turns
// nothing else around).
//
// By keyboard: the chunks of the top layer and the tokens are in the tab order; Enter
// or Space on one is a click (with Shift, a shift-click), the left and right arrows
// move along its row, and Escape cancels the selection. Selecting a chunk, extending a
// selection of tokens (Shift), or Enter again on a selected token moves the focus to
// what can be done with the selection; selecting a token leaves it there, to extend.

const HOW = {kept: "kept", retyped: "retyped", marked: "marked", removed: "removed", right: "right"};

function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

// A token's or a type's text, in an isolate of its own.
function isolated(text) {
  return element("bdi", null, text);
}

function sentenceNumber(node) {
  const sentence = node.closest(".sentence");
  return sentence ? Number(sentence.id.replace("sentence-", "")) : null;
}

export class Editor {
  constructor({view, panel, corrections, onCorrect, onWithdraw}) {
    this.view = view;
    this.panel = panel;
    this.corrections = corrections;
    this.onCorrect = onCorrect;
    this.onWithdraw = onWithdraw;
    this.layer = null; // the top layer's name (the column it predicts), null: nothing to correct
    this.results = [];
    this.selection = null; // {sentence, first, last, chunk: {type, probability} or null}
    this.anchor = null; // {sentence, token}: where a token selection began
    view.addEventListener("click", (event) => this.clicked(event));
    view.addEventListener("keydown", (event) => this.pressed(event));
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.cancel();
    });
    panel.querySelector("#keep").addEventListener("click", () => this.keep());
    panel.querySelector("#remove").addEventListener("click", () => this.remove());
    panel.querySelector("#sentence-right").addEventListener("click", () => this.sentenceRight());
    panel.querySelector("#cancel").addEventListener("click", () => this.cancel());
  }

  // Keys on a chunk or token of the view (see the module doc).
  pressed(event) {
    const cell = event.target.closest("td[tabindex]");
    if (!cell) return;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      const again = cell.classList.contains("selected") && !event.shiftKey;
      if (!again) this.clicked(event);
      const action = this.panel.querySelector("button:not([hidden]):not(:disabled)");
      if (this.selection && (again || this.selection.chunk || event.shiftKey) && action) action.focus();
    } else if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      const row = Array.from(cell.closest("tr").querySelectorAll("td[tabindex]"));
      const next = row[row.indexOf(cell) + (event.key === "ArrowLeft" ? -1 : 1)];
      if (next) {
        event.preventDefault();
        next.focus();
      }
    } else if (event.key === "Escape") {
      this.cancel();
    }
  }

  // The focus on the first chunk or token of a sentence, where the focus was lost or
  // left in the panel (a correction made by keyboard draws the view anew).
  focusSentence(sentence) {
    const active = document.activeElement;
    if (active && active !== document.body && !(this.panel.hidden && this.panel.contains(active))) return;
    const cell = this.view.querySelector(`#sentence-${sentence} td[tabindex]`);
    if (cell) cell.focus();
  }

  // No selection; the focus back on the chunk or token selected, if it is still shown.
  cancel() {
    const selection = this.selection;
    this.select(null);
    if (selection === null) return;
    const {sentence, first, last, chunk} = selection;
    const cell = chunk ? this.chunkCell(sentence, first, last, chunk.type) : this.tokenCells(sentence)[first];
    if (cell) cell.focus();
  }

  // After each answer: the model's top layer and chunk types, the results shown. What
  // `reselect` closed, or null.
  show(model, answer) {
    // only chunks are corrected: a top layer of tags (a part-of-speech tagger's) is not
    this.layer = model.chunk_types.length ? model.predicts[model.predicts.length - 1] : null;
    this.results = answer.results;
    const types = this.panel.querySelector("#types");
    types.replaceChildren(
      ...model.chunk_types.map((type) => {
        const button = element("button", "type", type);
        button.type = "button";
        button.dataset.type = type;
        button.addEventListener("click", () => this.typed(type));
        return button;
      }),
    );
    this.decorate();
    return this.reselect();
  }

  // The selection kept on the view drawn anew (a chunk with its new probability), and
  // the focus on it if the focus was on the view; closed if its chunk is not shown any
  // more: what was closed, to be said, or null.
  reselect() {
    const selection = this.selection;
    if (selection === null || this.layer === null) {
      this.select(null);
      return null;
    }
    const {sentence, first, last, chunk} = selection;
    const cell = chunk ? this.chunkCell(sentence, first, last, chunk.type) : this.tokenCells(sentence)[last];
    if (!cell) {
      this.select(null);
      return `the chunk selected (sentence ${sentence}, tokens ${first}–${last}) is not in the new answer`;
    }
    const probability = chunk ? Number(cell.dataset.probability) : null;
    this.select(chunk ? {...selection, chunk: {...chunk, probability}} : selection);
    if (document.activeElement === document.body) cell.focus();
    return null;
  }

  topCells(sentence) {
    const selector = `#sentence-${sentence} tr.layer[data-layer="${CSS.escape(this.layer)}"] td.span`;
    return Array.from(this.view.querySelectorAll(selector));
  }

  tokenCells(sentence) {
    return Array.from(this.view.querySelectorAll(`#sentence-${sentence} tr.tokens td`));
  }

  // Tokens first..last of a sentence to show, each in an isolate, a space between them.
  words(sentence, first, last) {
    const words = [];
    for (const cell of this.tokenCells(sentence).slice(first, last + 1)) {
      if (words.length) words.push(" ");
      words.push(isolated(cell.textContent));
    }
    return words;
  }

  clicked(event) {
    const cell = event.target.closest("td");
    if (!cell || this.layer === null || cell.closest("button")) return;
    const sentence = sentenceNumber(cell);
    const row = cell.closest("tr");
    if (row.classList.contains("layer") && row.dataset.layer === this.layer && cell.classList.contains("span")) {
      const first = Number(cell.dataset.first);
      const last = Number(cell.dataset.last);
      const chunk = {type: cell.dataset.type, probability: Number(cell.dataset.probability)};
      this.anchor = null;
      this.select({sentence, first, last, chunk});
    } else if (row.classList.contains("tokens") && cell.cellIndex > 0) {
      const token = cell.cellIndex - 1;
      if (event.shiftKey && this.anchor && this.anchor.sentence === sentence) {
        const first = Math.min(this.anchor.token, token);
        this.select({sentence, first, last: Math.max(this.anchor.token, token), chunk: null});
      } else {
        this.anchor = {sentence, token};
        this.select({sentence, first: token, last: token, chunk: null});
      }
    }
  }

  // Select a chunk or tokens (null: nothing), highlight it and show what can be done.
  select(selection) {
    this.selection = selection;
    for (const cell of this.view.querySelectorAll(".selected")) cell.classList.remove("selected");
    this.panel.hidden = selection === null;
    if (selection === null) return;
    const {sentence, first, last, chunk} = selection;
    if (chunk) {
      const cell = this.chunkCell(sentence, first, last, chunk.type);
      if (cell) cell.classList.add("selected");
    } else {
      for (const cell of this.tokenCells(sentence).slice(first, last + 1)) cell.classList.add("selected");
    }
    const where = `sentence ${sentence}, tokens ${first}–${last}`;
    this.panel
      .querySelector("#selection")
      .replaceChildren(
        ...(chunk ? [isolated(chunk.type), " "] : []),
        "“",
        ...this.words(sentence, first, last),
        chunk
          ? `” (${where}, p = ${chunk.probability.toFixed(4)}): change its type, remove it or keep it`
          : `” (${where}): mark as a chunk of type`,
      );
    for (const button of this.panel.querySelectorAll("button.type")) {
      button.disabled = Boolean(chunk) && button.dataset.type === chunk.type;
    }
    this.panel.querySelector("#keep").hidden = !chunk;
    this.panel.querySelector("#remove").hidden = !chunk;
  }

  chunkCell(sentence, first, last, type) {
    return this.topCells(sentence).find(
      (cell) => Number(cell.dataset.first) === first && Number(cell.dataset.last) === last && cell.dataset.type === type,
    );
  }

  // The selection acted on, closed: the correction replaces what it showed.
  taken() {
    const selection = this.selection;
    this.select(null);
    return selection;
  }

  typed(type) {
    const {sentence, first, last, chunk} = this.taken();
    this.onCorrect(sentence, {first, last, type, how: chunk ? HOW.retyped : HOW.marked});
  }

  keep() {
    const {sentence, first, last, chunk} = this.taken();
    this.onCorrect(sentence, {first, last, type: chunk.type, how: HOW.kept});
  }

  remove() {
    const {sentence, first, last} = this.taken();
    this.onCorrect(sentence, {first, last, type: null, how: HOW.removed});
  }

  // Every chunk of the selected sentence (as shown) kept, every token outside them fixed to O.
  sentenceRight() {
    const {sentence} = this.taken();
    const tokens = this.tokenCells(sentence).length;
    const corrections = [];
    let next = 0;
    for (const {first, last, type} of this.results[sentence].entities) {
      if (first > next) corrections.push({first: next, last: first - 1, type: null, how: HOW.right});
      corrections.push({first, last, type, how: HOW.kept});
      next = last + 1;
    }
    if (next < tokens) corrections.push({first: next, last: tokens - 1, type: null, how: HOW.right});
    const known = this.corrections.of(sentence);
    const same = (a, b) => a.first === b.first && a.last === b.last && a.type === b.type;
    this.onCorrect(
      sentence,
      ...corrections.filter((correction) => !known.some((other) => same(other, correction))),
    );
  }

  // Put the chunks and tokens in the tab order, mark the corrected ones, and list each
  // sentence's corrections.
  decorate() {
    if (this.layer === null) return;
    for (const sentenceNode of this.view.querySelectorAll(".sentence")) {
      const sentence = sentenceNumber(sentenceNode);
      const corrections = this.corrections.of(sentence);
      const tokens = this.tokenCells(sentence);
      for (const cell of [...this.topCells(sentence), ...tokens]) {
        cell.tabIndex = 0;
        cell.setAttribute("role", "button");
      }
      const list = element("div", "corrections");
      list.append(element("span", "heading", corrections.length ? "corrections:" : "no corrections"));
      for (const correction of corrections) {
        const {first, last, type, how} = correction;
        if (type === null) {
          for (const cell of tokens.slice(first, last + 1)) cell.classList.add("outside");
        } else {
          const cell = this.chunkCell(sentence, first, last, type);
          if (cell) {
            cell.classList.add("corrected");
            cell.title += `; ${how} by you`;
          }
        }
        const item = element("span", "correction");
        item.dataset.first = String(first);
        item.dataset.last = String(last);
        const withdraw = element("button", "withdraw", "×");
        withdraw.type = "button";
        withdraw.title = "withdraw this correction";
        withdraw.addEventListener("click", () => this.onWithdraw(sentence, correction));
        item.append(`${how} `, isolated(type ?? "O"), " “", ...this.words(sentence, first, last), "” ", withdraw);
        list.append(item);
      }
      sentenceNode.append(list);
    }
  }

  // The chunks of the top layer flagged for checking (below the threshold) that
  // nobody corrected yet.
  toCheck() {
    if (this.layer === null) return [];
    const cells = this.view.querySelectorAll(`tr.layer[data-layer="${CSS.escape(this.layer)}"] td.span.low`);
    return Array.from(cells).filter((cell) => !cell.classList.contains("corrected"));
  }

  // Select the least probable chunk to check (Culotta & McCallum's order), if any.
  selectNextToCheck() {
    const cells = this.toCheck();
    if (!cells.length) return;
    const least = cells.reduce((a, b) => (Number(b.dataset.probability) < Number(a.dataset.probability) ? b : a));
    least.scrollIntoView({block: "nearest"});
    least.click();
  }
}
