"""Feature extraction reads one way, columns -> token table -> values -> hashes ->
rows: while a corpus is fitted and transformed, no features module is called back by
a module it called (traced with sys.setprofile; frames outside fstcrf are
transparent), and no module imports one of a later step."""

import ast
import sys
from pathlib import Path

import fstcrf.features
from fstcrf.corpus.conll import Sentence
from fstcrf.model.chain import ChainCRF

FEATURES = Path(fstcrf.features.__file__).parent
#: Each step's modules, in the order the data flows (template.py, the definitions, and
#: extractor.py, which drives the steps, stand outside it).
STEPS = [
    ["seen_entities", "resources"],
    ["token_table"],
    ["value_lists", "occurrences"],
    ["hashing", "item_lists"],
    ["dictionary", "sparse_rows", "encoding"],
]
TEMPLATE = "\n".join(
    [
        "bias",
        "word[0]",
        "lower(word[-1])|pos[0]",
        "shape(word[+2])",
        "prefixes(word[0],1,3)",
        "suffixes(lower(word[-1]),2,3)",
        "ngrams(word[0],2,3)|pos[0]",
        "bag(lower(word),-2,1)",
        "types(word,-1,1)",
        "seen_lower(word[0])",
        "value(score[0])",
    ]
)


def _corpus() -> list[Sentence]:
    words = [["The", "cat", "sat", "on", "the", "Mat"], ["A", "dog", "ran"], ["Cats", "nap"]]
    tags = [["DT", "NN", "VBD", "IN", "DT", "NN"], ["DT", "NN", "VBD"], ["NNS", "VBP"]]
    chunks = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"], ["B-NP", "B-VP"]]
    return [
        Sentence({"word": w, "pos": p, "score": [str(len(x)) for x in w], "chunk": c})
        for w, p, c in zip(words, tags, chunks)
    ]


def _module(code) -> str | None:
    name = code.co_filename
    return Path(name).stem if Path(name).parent == FEATURES else ("fstcrf" if "fstcrf" in name else None)


def test_no_features_module_is_called_back_while_a_corpus_is_fitted_and_tagged():
    stack: list[str | None] = []
    callbacks = []

    def profile(frame, event, arg):
        if event == "call":
            module = _module(frame.f_code)
            caller = next((m for m in reversed(stack) if m is not None), None)
            if module not in (None, "fstcrf", caller) and module in stack:
                callbacks.append(f"{caller} -> {module}.{frame.f_code.co_name}")
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    model = ChainCRF(template=TEMPLATE, max_iter=2, threads=1)
    sys.setprofile(profile)
    try:
        model.fit(_corpus(), target="chunk")
        model.predict(_corpus())
    finally:
        sys.setprofile(None)
    assert callbacks == []


def test_no_step_imports_a_later_one():
    step_of = {name: k for k, names in enumerate(STEPS) for name in names}
    later = []
    for name, step in step_of.items():
        tree = ast.parse((FEATURES / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fstcrf.features."):
                imported = node.module.rsplit(".", 1)[1]
                if step_of.get(imported, -1) > step:
                    later.append(f"{name} imports {imported}")
    assert later == []
