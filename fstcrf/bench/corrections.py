"""``fstcrf bench corrections``: a simulated person corrects a tagger's chunks until
every sentence is right, with the corrections decoded as constraints (Kristjansson
et al. 2004) against pasted into the output, the wrong chunks taken left to right or
the least confident first (Culotta & McCallum 2004).

The person compares a sentence's chunks (first, last, type) with the gold ones.  A
*wrong* chunk is an output chunk not among the gold ones; a *missed* one a gold chunk
the output lacks.  One correction fixes one chunk:

- a wrong chunk that overlaps a missed gold chunk: the first such gold chunk is
  marked (it becomes a required span, which also removes every chunk overlapping it);
- a wrong chunk that overlaps none: it is removed: its tokens are outside every chunk
  (fixed to O; with ``removal="forbidden"`` only that exact chunk is forbidden);
- a missed gold chunk that no wrong chunk overlaps: it is marked (a required span).

Which chunk the person fixes next: ``left-to-right``, the error (wrong or missed
chunk) that begins first, a wrong chunk before a missed one at the same token;
``least-confident``, the wrong chunk of the lowest probability (the exact
probability that the output holds it, under the corrections made so far), then the
missed chunks left to right.  Checking a right chunk costs nothing here: only
corrections are counted.

- **pasting**: the output is never decoded again; each correction is applied to the
  chunks directly (marking a chunk replaces the chunks overlapping it).  Each of its
  corrections fixes exactly the chunks it names.
- **constrained**: after each correction the sentence is decoded again (Viterbi)
  under all its corrections so far, which may fix other errors too, or make new ones
  (then counted like any other).

Both arms start from the same Viterbi output and stop when the chunks are the gold
ones.  A sentence whose gold labels the model cannot write (a label it lacks) is
left out of both and counted.  Nothing is tuned: the models are ``fstcrf train``'s
defaults and decode with Viterbi at temperature 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

ORDERINGS = ("left-to-right", "least-confident")
#: The constrained arm's variants: (how a removed chunk is decoded, whether what the person read is kept).
VARIANTS = (("outside", False), ("forbidden", False), ("outside", True))


@dataclass(frozen=True)
class Correction:
    """``mark`` True: the gold chunk ``span`` (first, last, type) is marked; False: the
    wrong chunk ``span`` is removed."""

    mark: bool
    span: tuple[int, int, str]

    def applied(self, chunks: set) -> set:
        """The chunks after this correction is pasted into them."""
        first, last, _ = self.span
        if not self.mark:
            return chunks - {self.span}
        return {chunk for chunk in chunks if chunk[1] < first or chunk[0] > last} | {self.span}


def overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def next_correction(chunks: set, gold: set, ordering: str, probability: dict | None = None) -> Correction | None:
    """The person's next correction of a sentence whose output holds ``chunks`` (None
    when they are the gold chunks); ``probability`` maps each output chunk to its
    probability (``least-confident``)."""
    wrong = sorted(chunks - gold)
    missed = sorted(gold - chunks)
    if not wrong and not missed:
        return None
    if wrong and ordering == "least-confident":
        assert probability is not None
        chosen = min(wrong, key=lambda chunk: (probability[chunk], chunk))
    elif wrong and (not missed or wrong[0][0] <= missed[0][0]):
        chosen = wrong[0]
    else:
        return Correction(True, missed[0])
    replacing = [gold_chunk for gold_chunk in missed if overlaps(gold_chunk, chosen)]
    return Correction(True, replacing[0]) if replacing else Correction(False, chosen)


@dataclass
class ArmCounts:
    """Corrections of one arm: ``total``, and per sentence (``per_sentence``)."""

    total: int = 0
    per_sentence: list[int] = field(default_factory=list)


def pasted(chunks: set, gold: set, ordering: str, probability: dict) -> int:
    """Corrections the pasting arm needs for one sentence."""
    count = 0
    while (correction := next_correction(chunks, gold, ordering, probability)) is not None:
        chunks = correction.applied(chunks)
        probability = {**probability, correction.span: 1.0} if correction.mark else probability
        count += 1
    return count


@dataclass
class Sentence:
    """What the person has done to one sentence in the constrained arm: ``corrections``,
    and what they read and found right: ``read`` chunks and ``outside`` tokens."""

    corrections: list[Correction] = field(default_factory=list)
    read: set = field(default_factory=set)
    outside: set = field(default_factory=set)

    def constraints(self, removal: str):
        """The Constraints of the corrections (marked chunks required; removed ones with
        their tokens fixed to O, ``removal`` "outside", or forbidden) and of what was read."""
        from fstcrf.engine.constraints import Constraints, Span

        removed = [c.span for c in self.corrections if not c.mark]
        outside = {t for first, last, _ in removed for t in range(first, last + 1)} if removal == "outside" else set()
        return Constraints(
            spans=[Span(*span) for span in sorted({c.span for c in self.corrections if c.mark} | self.read)],
            forbidden=[Span(*span) for span in removed] if removal == "forbidden" else [],
            fixed={t: "O" for t in sorted(outside | self.outside)},
        )

    def note_read(self, chunks: set, gold: set, ordering: str, probability: dict) -> None:
        """Add what the person read before the next correction, all of it right: left to
        right, the chunks and the tokens outside them before the first error; least
        confident first, the chunks less probable than the wrong one chosen."""
        wrong = chunks - gold
        if wrong and ordering == "least-confident":
            chosen = min(wrong, key=lambda chunk: (probability[chunk], chunk))
            self.read |= {c for c in chunks & gold if (probability[c], c) < (probability[chosen], chosen)}
            return
        first_error = min(chunk[0] for chunk in wrong | (gold - chunks))
        before = {chunk for chunk in chunks if chunk[0] < first_error}
        covered = {t for first, last, _ in chunks for t in range(first, last + 1)}
        self.read |= before
        self.outside |= set(range(first_error)) - covered


def constrained(model, sentences, gold: list[set], ordering: str, removal: str, keep_read: bool) -> list[int]:
    """Corrections the constrained arm needs for each sentence: the sentences still
    wrong are decoded again together after each round of one correction each (with
    ``keep_read``, under what the person has read too)."""
    states = [Sentence() for _ in sentences]
    pending = list(range(len(sentences)))
    while pending:
        constraints = [states[b].constraints(removal) or None for b in pending]
        outputs = output_chunks(model, [sentences[b] for b in pending], constraints, ordering)
        still = []
        for b, (chunks, probability) in zip(pending, outputs):
            correction = next_correction(chunks, gold[b], ordering, probability)
            if correction is not None:
                if keep_read:
                    states[b].note_read(chunks, gold[b], ordering, probability)
                states[b].corrections.append(correction)
                still.append(b)
        pending = still
    return [len(state.corrections) for state in states]


def output_chunks(model, sentences, constraints, ordering: str) -> list[tuple[set, dict]]:
    """Each sentence's Viterbi chunks under its constraints, with their probabilities
    when the ordering needs them."""
    if ordering == "least-confident":
        entities = model.predict_spans(sentences, constraints=constraints)
        return [({e[:3] for e in found}, {e[:3]: e.probability for e in found}) for found in entities]
    from fstcrf.engine.spans import path_chunks

    return [(set(path_chunks(labels)), {}) for labels in model.predict(sentences, constraints=constraints)]


def simulate(model, corpus, target: str, name: str) -> dict:
    """Both arms and both orderings on ``corpus`` (gold column ``target``)."""
    from fstcrf.engine.spans import path_chunks

    known = set(model.labels_)
    kept = [s for s in corpus.sentences if set(s[target]) <= known]
    gold = [set(path_chunks(sentence[target])) for sentence in kept]
    started = time.perf_counter()
    first = model.predict_spans(kept)
    chunks = [{e[:3] for e in found} for found in first]
    probability = [{e[:3]: e.probability for e in found} for found in first]
    wrong = [b for b in range(len(kept)) if chunks[b] != gold[b]]
    result = {
        "task": name,
        "sentences": len(corpus.sentences),
        "left out": len(corpus.sentences) - len(kept),
        "gold chunks": sum(len(g) for g in gold),
        "sentences wrong": len(wrong),
        "errors": sum(len(chunks[b] ^ gold[b]) for b in wrong),
    }
    result["arms"] = []
    for ordering in ORDERINGS:
        paste = [pasted(chunks[b], gold[b], ordering, probability[b]) for b in wrong]
        for removal, keep_read in VARIANTS:
            decoded = constrained(
                model, [kept[b] for b in wrong], [gold[b] for b in wrong], ordering, removal, keep_read
            )
            result["arms"].append(
                {
                    "ordering": ordering,
                    "removal": removal,
                    "keep read": keep_read,
                    "pasting": sum(paste),
                    "constrained": sum(decoded),
                    "reduction": 1 - sum(decoded) / sum(paste) if sum(paste) else 0.0,
                    "fewer": sum(d < p for d, p in zip(decoded, paste)),
                    "more": sum(d > p for d, p in zip(decoded, paste)),
                }
            )
    result["seconds"] = time.perf_counter() - started
    return result


@dataclass(frozen=True)
class Task:
    """One task of the benchmark: the command that trains its default model (its
    arguments after ``fstcrf train``, the output added), the file simulated on and the
    gold column."""

    name: str
    train: tuple[str, ...]
    test: str
    target: str


def tasks(data, held_out: bool, folder) -> list[Task]:
    """The chunking and NER tasks of the CoNLL corpora under ``data``; ``held_out``: on
    development data instead of the test sets (CoNLL-2000 has none: the chunker is then
    trained on the first 80% of train.txt's sentences, written to ``folder``, and the
    person corrects the last 20%; NER: eng.testa)."""
    from pathlib import Path

    chunking, ner = Path(data) / "conll2000", Path(data) / "conll2003"
    ner_train = (str(ner / "eng.train"), "--columns", "word,pos,chunk,ner", "--target", "ner")
    if not held_out:
        return [
            Task("CoNLL-2000 chunking (test.txt)", (str(chunking / "train.txt"),), str(chunking / "test.txt"), "chunk"),
            Task("CoNLL-2003 English NER (eng.testb)", ner_train, str(ner / "eng.testb"), "ner"),
        ]
    sentences = (chunking / "train.txt").read_text("utf-8").strip().split("\n\n")
    cut = len(sentences) * 4 // 5
    first, last = Path(folder) / "train_first80.txt", Path(folder) / "train_last20.txt"
    first.write_text("\n\n".join(sentences[:cut]) + "\n\n", "utf-8")
    last.write_text("\n\n".join(sentences[cut:]) + "\n\n", "utf-8")
    return [
        Task("CoNLL-2000 chunking (last 20% of train.txt)", (str(first),), str(last), "chunk"),
        Task("CoNLL-2003 English NER (eng.testa)", ner_train, str(ner / "eng.testa"), "ner"),
    ]


def bench_corrections(
    data,
    models: dict[str, str],
    held_out: bool = False,
    threads: int = 2,
    progress: bool = True,
    max_iter: int | None = None,
    sentences: int | None = None,
) -> list[dict]:
    """Both tasks (:func:`tasks`), each model trained by ``fstcrf train`` with its
    defaults (``max_iter``: this many L-BFGS iterations instead) unless ``models``
    names its file ("chunk" or "ner"); ``sentences``: the first this many of each
    test set (default all)."""
    import subprocess
    import tempfile

    from fstcrf.bench.harness import fstcrf_command
    from fstcrf.cli.decoding import read_for
    from fstcrf.model.compose import load_any

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for task in tasks(data, held_out, folder):
            path = models.get(task.target)
            if path is None:
                path = f"{folder}/{task.target}.model"
                command = fstcrf_command("train", *task.train, "--threads", str(threads), "-o", path)
                command += ["--max-iter", str(max_iter)] if max_iter else []
                subprocess.run(command + ([] if progress else ["-q"]), check=True)
            model = load_any(path)
            test = read_for(model, task.test, gold_required=True)
            rows.append(simulate(model, test[:sentences], task.target, task.name))
    return rows


def format_corrections(rows: list[dict]) -> str:
    lines = [
        "| task | order of the fixes | a removed chunk, decoded | what was read, kept | corrections pasted | "
        "corrections decoded as constraints | fewer | sentences fewer / more |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        for arm in row["arms"]:
            removal = "tokens O" if arm["removal"] == "outside" else "chunk forbidden"
            lines.append(
                f"| {row['task']} | {arm['ordering']} | {removal} | {'yes' if arm['keep read'] else 'no'} | "
                f"{arm['pasting']:,} | {arm['constrained']:,} | "
                f"{arm['reduction']:.1%} | {arm['fewer']} / {arm['more']} |"
            )
    lines.append("")
    for row in rows:
        lines.append(
            f"{row['task']}: {row['sentences']:,} sentences ({row['left out']} left out: gold labels the model "
            f"lacks), {row['gold chunks']:,} gold chunks; {row['sentences wrong']:,} sentences wrong at first, "
            f"{row['errors']:,} wrong or missed chunks; {row['seconds']:.0f} s"
        )
    return "\n".join(lines)
