// What a person has corrected in each sentence, and the constraints that say it, in
// the form of fstcrf.Constraints.to_dict. As `fstcrf bench corrections` decodes them:
// a chunk kept, retyped or marked is a required span (exactly that chunk), and a
// removed chunk's tokens are fixed to O. A correction is
// {first, last, type, how}: tokens first..last (inclusive, 0-based), the chunk type
// (null: the tokens are outside every chunk) and how it came ("kept", "retyped",
// "marked", "removed", "right").

function byFirstToken(a, b) {
  return a.first - b.first;
}

function overlaps(a, b) {
  return a.first <= b.last && b.first <= a.last;
}

export class Corrections {
  constructor() {
    this.sentences = new Map(); // sentence index -> its corrections, by first token
  }

  clear() {
    this.sentences.clear();
  }

  get size() {
    let size = 0;
    for (const corrections of this.sentences.values()) size += corrections.length;
    return size;
  }

  of(sentence) {
    return this.sentences.get(sentence) || [];
  }

  // A new correction replaces the sentence's corrections that share a token with it.
  add(sentence, correction) {
    const kept = this.of(sentence).filter((other) => !overlaps(other, correction));
    this.sentences.set(sentence, [...kept, correction].sort(byFirstToken));
  }

  withdraw(sentence, correction) {
    const kept = this.of(sentence).filter((other) => other !== correction);
    if (kept.length) this.sentences.set(sentence, kept);
    else this.sentences.delete(sentence);
  }

  snapshot() {
    return new Map(this.sentences);
  }

  restore(snapshot) {
    this.sentences = new Map(snapshot);
  }

  // The request's constraints: one object (or null) for each of `count` sentences;
  // null when nothing is corrected.
  constraints(count) {
    if (this.size === 0) return null;
    return Array.from({length: count}, (_, sentence) => constraintsOf(this.of(sentence)));
  }
}

export function constraintsOf(corrections) {
  if (!corrections.length) return null;
  const constraints = {};
  const spans = corrections.filter((c) => c.type !== null);
  if (spans.length) constraints.spans = spans.map(({first, last, type}) => ({first, last, type}));
  const outside = corrections.filter((c) => c.type === null);
  if (outside.length) {
    constraints.fixed = {};
    for (const {first, last} of outside) {
      for (let token = first; token <= last; token++) constraints.fixed[String(token)] = "O";
    }
  }
  return constraints;
}
