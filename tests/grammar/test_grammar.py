"""Constraint grammars (fstcrf.grammar): the parser, the shipped grammars, random
grammars against a regular-expression oracle, and inference under grammars.

Languages are compared on every label sequence of length <= 5.  The oracle for
random grammars maps each label to one character: a sub-grammar without
``&``, ``-`` or ``!`` becomes a Python regular expression matched with
``re.fullmatch``; the boolean operators combine the resulting string sets
(exact, since only lengths <= 5 are compared and concatenation never shortens).
"""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)
import fnmatch
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import fstcrf
from fstcrf.errors import GrammarError, InfeasibleError, LabelError, TopologyError
from fstcrf.grammar import (
    SHIPPED_DIR,
    UnknownLabelError,
    accepts,
    compile_grammar,
    constrain,
    decode,
    load_grammar,
    parse_grammar,
    restrict,
    shipped_grammars,
    state_map,
)
from fstcrf.engine.lattice import to_fst
from fstcrf.engine.topology import Topology, bioes, bioes_labels, first_order, iob2, iob2_labels, second_order

from oracles import BruteForce, enumerate_state_paths
from strategies import oracle_settings

MAX_LENGTH = 5
ROOT = Path(__file__).resolve().parents[2]
NP_VP = iob2_labels(["NP", "VP"])  # O B-NP I-NP B-VP I-VP


def sequences(labels, max_length=MAX_LENGTH):
    """Every label sequence of length 0..max_length."""
    for n in range(max_length + 1):
        yield from itertools.product(labels, repeat=n)


def language(fst, max_length=MAX_LENGTH) -> set:
    """The label sequences of length <= max_length an acceptor accepts (by path enumeration)."""
    table = fst.input_symbols()
    keys = range(1, table.num_symbols())
    sigma = pynini.Fst()
    a, b = sigma.add_state(), sigma.add_state()
    sigma.set_start(a)
    sigma.set_final(b)
    for key in keys:
        sigma.add_arc(a, pynini.Arc(key, key, 0, b))
    bounded = pynini.intersect(fst, pynini.closure(sigma, 0, max_length).arcsort("ilabel"))
    if bounded.num_states() == 0:
        return set()
    out, it = set(), bounded.paths()
    while not it.done():
        out.add(tuple(table.find(k) for k in it.ilabels() if k))
        it.next()
    return out


def defined(labels, predicate, max_length=MAX_LENGTH) -> set:
    return {seq for seq in sequences(labels, max_length) if predicate(seq)}


def topology_language(topology: Topology, max_length=MAX_LENGTH) -> set:
    """Label sequences of length 1..max_length a topology allows (by state-path enumeration)."""
    out = set()
    for length in range(1, max_length + 1):
        for path in enumerate_state_paths(topology, length):
            out.add(tuple(topology.labels[topology.state_label[s]] for s in path))
    return out


def compiled(text, labels=NP_VP, **kwargs):
    return compile_grammar(parse_grammar(text), labels, **kwargs)


# ---------------------------------------------------------------------------
# every construct
# ---------------------------------------------------------------------------


def _count(seq, prefix):
    return sum(label.startswith(prefix) for label in seq)


CONSTRUCTS = [
    ("start = O ;", lambda s: s == ("O",)),
    ('start = "B-NP" O ;', lambda s: s == ("B-NP", "O")),
    ("start = B-NP I-NP* ;", lambda s: len(s) >= 1 and s[0] == "B-NP" and set(s[1:]) <= {"I-NP"}),
    ("start = [B-*] ;", lambda s: len(s) == 1 and s[0] in ("B-NP", "B-VP")),
    ("start = [*-NP]+ ;", lambda s: len(s) >= 1 and all(x.endswith("-NP") for x in s)),
    ("start = [^O] ;", lambda s: len(s) == 1 and s[0] != "O"),
    ('start = [O "I-VP" B-N*] ;', lambda s: len(s) == 1 and s[0] in ("O", "I-VP", "B-NP")),
    ("start = [^B-* I-VP]* ;", lambda s: set(s) <= {"O", "I-NP"}),
    ("start = . . ;", lambda s: len(s) == 2),
    ("start = .* O .* ;", lambda s: "O" in s),
    ("start = O | B-NP I-NP ;", lambda s: s in {("O",), ("B-NP", "I-NP")}),
    ("start = O B-NP? ;", lambda s: s in {("O",), ("O", "B-NP")}),
    ("start = O{2} ;", lambda s: s == ("O", "O")),
    ("start = O{1,3} ;", lambda s: 1 <= len(s) <= 3 and set(s) == {"O"}),
    ("start = B-NP O{,2} ;", lambda s: s[:1] == ("B-NP",) and len(s) <= 3 and set(s[1:]) <= {"O"}),
    ("start = O{3,} ;", lambda s: len(s) >= 3 and set(s) == {"O"}),
    ("start = O O{0} ;", lambda s: s == ("O",)),
    ("start = (O | B-NP){2} ;", lambda s: len(s) == 2 and set(s) <= {"O", "B-NP"}),
    ("start = .+ - .* O .* ;", lambda s: len(s) >= 1 and "O" not in s),
    ("start = .{2} & O .* ;", lambda s: len(s) == 2 and s[0] == "O"),
    ("start = .+ & !(.* O) ;", lambda s: len(s) >= 1 and s[-1] != "O"),
    ("start = !O* ;", lambda s: set(s) != {"O"} and len(s) >= 1),
    ("start = !(O*) ;", lambda s: set(s) != {"O"} and len(s) >= 1),
    # precedence: concatenation binds tighter than & and -, which bind tighter than |
    ("start = O O | B-NP - B-NP ;", lambda s: s == ("O", "O")),
    ("start = O .* - O O .* - O B-NP ;", lambda s: s[:1] == ("O",) and s[:2] != ("O", "O") and s != ("O", "B-NP")),
    ("start = O . & . B-NP | I-NP ;", lambda s: s in {("O", "B-NP"), ("I-NP",)}),
    # rules, used before they are defined; comments anywhere
    (
        "# header\nstart = np+ ; # trailing\nnp = B-NP I-NP* ;\n",
        lambda s: len(s) >= 1 and s[0] == "B-NP" and set(s) <= {"B-NP", "I-NP"},
    ),
    # variables: any / all / with
    (
        "start = any T: B-{T} I-{T}* ;",
        lambda s: len(s) >= 1 and s[0].startswith("B-") and all(x == "I-" + s[0][2:] for x in s[1:]),
    ),
    ("start = . & (all T: [^I-{T}]) ;", lambda s: s in {("O",), ("B-NP",), ("B-VP",)}),
    ("start = with T = VP: B-{T} I-{T} ;", lambda s: s == ("B-VP", "I-VP")),
    ('start = with T = "NP": [*-{T}] ;', lambda s: s in {("B-NP",), ("I-NP",)}),
    ("start = any T: any U: B-{T} B-{U} ;", lambda s: len(s) == 2 and all(x.startswith("B-") for x in s)),
    ("start = any T: B-{T} (with T = NP: I-{T}) ;", lambda s: s in {("B-NP", "I-NP"), ("B-VP", "I-NP")}),
    ("start = B-NP any T: I-{T} ;", lambda s: s in {("B-NP", "I-NP"), ("B-NP", "I-VP")}),
    (
        "seg = B-{T} I-{T}* ;\nstart = (O | any T: seg)* ;",
        lambda s: (
            not s
            or re.fullmatch(r"(O|B-NP( I-NP)*|B-VP( I-VP)*)( (O|B-NP( I-NP)*|B-VP( I-VP)*))*", " ".join(s)) is not None
        ),
    ),
]


@pytest.mark.parametrize("text, predicate", CONSTRUCTS, ids=[t for t, _ in CONSTRUCTS])
def test_construct(text, predicate):
    assert language(compiled(text)) == defined(NP_VP, predicate)


def test_odd_labels_are_quoted_and_keywords_too():
    labels = ("a,b", "x.y", "any", "PRP$", "n-1")
    fst = compiled('start = "a,b" "x.y"* "any" PRP$ n-1 ;', labels)
    assert language(fst) == {("a,b",) + ("x.y",) * k + ("any", "PRP$", "n-1") for k in range(2)}
    assert accepts(fst, ["a,b", "x.y", "x.y", "any", "PRP$", "n-1"])
    fst = compiled('start = ["x.y" *,*] ;', labels)
    assert language(fst) == {("x.y",), ("a,b",)}


def test_compact_spelling():
    """Whitespace is only needed to separate labels from each other and from '-'."""
    assert language(compiled("start=(O|B-NP)+&.{2}-O.;")) == defined(
        NP_VP, lambda s: len(s) == 2 and set(s) <= {"O", "B-NP"} and s[0] != "O"
    )


def test_compiled_acceptor():
    fst = compiled("start = B-NP I-NP* | O ;")
    assert (
        fst.properties(pynini.I_DETERMINISTIC | pynini.ACCEPTOR | pynini.NO_EPSILONS, True)
        == pynini.I_DETERMINISTIC | pynini.ACCEPTOR | pynini.NO_EPSILONS
    )
    assert fst.num_states() == 3  # minimal
    table = fst.input_symbols()
    assert [table.find(k) for k in range(1, 6)] == list(NP_VP)
    assert accepts(fst, ["B-NP", "I-NP"]) and not accepts(fst, ["I-NP"]) and not accepts(fst, [])
    with pytest.raises(LabelError, match="unknown label 'B-XX'"):
        accepts(fst, ["B-XX"])
    with pytest.raises(LabelError, match="sequence of labels"):
        accepts(fst, "O")


def test_grammar_ast():
    grammar = parse_grammar("a = O ;\nstart = a [B-*] ;", source="mine.fgr")
    assert grammar.rule_names == ("a", "start")
    assert str(grammar.rule_map["start"].pos) == "mine.fgr:2:1"
    assert parse_grammar("start = O ;") == parse_grammar("start = O ;")


def test_params():
    grammar = parse_grammar("start = B-{X} I-{X}* ;")
    assert language(compile_grammar(grammar, NP_VP, params={"X": "VP"})) == defined(
        NP_VP, lambda s: s[:1] == ("B-VP",) and set(s[1:]) <= {"I-VP"}
    )
    # `with` overrides a parameter
    grammar = parse_grammar("start = B-{X} (with X = NP: I-{X}) ;")
    assert language(compile_grammar(grammar, NP_VP, params={"X": "VP"})) == {("B-VP", "I-NP")}


# ---------------------------------------------------------------------------
# errors, with positions
# ---------------------------------------------------------------------------

SYNTAX_ERRORS = [
    ("start = O % ;", "<string>:1:11: unexpected character '%'"),
    ("start = O\nnext = O ;", "<string>:2:6: expected ';' at the end of rule 'start', found '='"),
    ("start = O", "<string>:1:10: expected ';' at the end of rule 'start', found the end of the file"),
    ("start = (O | B-NP ;", "<string>:1:19: expected ')' to close the parenthesis, found ';'"),
    ("start = ;", "<string>:1:9: expected a label, a label class, '.', a rule or '(', found ';'"),
    ("start = O |  ;", "<string>:1:14: expected a label"),
    ('start = "B-NP ;', "<string>:1:9: unterminated string"),
    ('start = "" ;', "<string>:1:9: invalid quoted label"),
    ("start = [B-* ;", "<string>:1:9: unterminated label class"),
    ("start = [ ] ;", "<string>:1:9: empty label class [ ]"),
    ("start = [B-[x]] ;", "<string>:1:12: '[' inside a label class"),
    ("start = [B-{] ;", "<string>:1:12: '{' in a label pattern starts a variable"),
    ("start = [B-}] ;", "<string>:1:12: unmatched '}'"),
    ("start = O{3,2} ;", "<string>:1:10: repetition {3,2} has its upper bound below its lower bound"),
    ("start = O{-1} ;", "<string>:1:11: expected a number in '{m,n}', found '-'"),
    ("start = O{ x } ;", "<string>:1:12: expected a number in '{m,n}', found 'x'"),
    ("start = O{2 ;", "<string>:1:13: expected '}' to close the repetition"),
    ("start = O{2000} ;", "<string>:1:10: repetition bounds are limited to 1000"),
    ("start = B-* ;", "<string>:1:9: 'B-*' looks like a label pattern; patterns are written in brackets, e.g. [B-*]"),
    ("start = O *-NP ;", "<string>:1:11: '*-NP' looks like a label pattern"),
    ("start = any ;", "<string>:1:13: expected a variable name after 'any' (letters, digits and _), found ';'"),
    ("start = O all ;", "<string>:1:15: expected a variable name after 'all'"),
    ("start = any T O ;", "<string>:1:15: expected ':' after 'any T', found 'O'"),
    ("start = with T: O ;", "<string>:1:15: expected '=' after 'with T'"),
    ("start = as ;", "<string>:1:9: 'as' is a keyword; quote it (\"as\") to use it as a label"),
    ("B-NP = O ;", "<string>:1:1: expected a rule name or 'import' (letters, digits and _), found 'B-NP'"),
    ("start = O ;\nstart = O ;", "<string>:2:1: rule 'start' is already defined at <string>:1:1"),
    ("import iob2 ;", "<string>:1:8: expected a quoted grammar name or path after 'import', found 'iob2'"),
    ('import "iob2"\nstart = O ;', "<string>:2:1: expected ';' after the import, found 'start'"),
    ('import "no_such_grammar" ;', "<string>:1:1: cannot find grammar 'no_such_grammar'"),
    ('import "iob2" ;\nimport "bioes" as iob2 ;', "<string>:2:1: a grammar is already imported as 'iob2'"),
    ("start = iob2.start ;", "<string>:1:9: 'iob2.start' names no imported grammar 'iob2' (imports: none)"),
    ("start = O.O ;", "write 'O . O' with spaces"),
    ('import "iob2" ;\nstart = iob2.nope ;', "<string>:2:9: grammar 'iob2' ("),
]


@pytest.mark.parametrize("text, message", SYNTAX_ERRORS, ids=[t for t, _ in SYNTAX_ERRORS])
def test_syntax_error(text, message):
    with pytest.raises(GrammarError) as caught:
        parse_grammar(text)
    assert message in str(caught.value)
    assert str(caught.value).startswith("<string>:")


COMPILE_ERRORS = [
    (
        "start = O B-XX ;",
        UnknownLabelError,
        "<string>:1:11: unknown label 'B-XX' (and no rule has that name); "
        "the model's labels are O, B-NP, I-NP, B-VP, I-VP",
    ),
    ('start = "np" ;', UnknownLabelError, '<string>:1:9: unknown label "np"'),
    (
        "start = [B-X*] ;",
        UnknownLabelError,
        "<string>:1:9: the label class [B-X*] matches no label; the model's labels are O",
    ),
    ("start = [^*] ;", UnknownLabelError, "<string>:1:9: the label class [^*] matches no label"),
    ("start = B-{X} ;", UnknownLabelError, "unknown label 'B-PP' (from B-{X})"),
    ("start = O - O ;", GrammarError, "<string>:1:1: the grammar accepts nothing: rule 'start' allows no non-empty"),
    ("start = O{0} ;", GrammarError, "the grammar accepts nothing"),
    ("main = O ;", GrammarError, "<string>: no rule named 'start' (rules: main)"),
    (
        "O = B-NP ;\nstart = O ;",
        GrammarError,
        "<string>:2:9: 'O' is both a rule of <string> and a label; write \"O\" for the label or rename the rule",
    ),
    ("start = O start? ;", GrammarError, "<string>:1:11: rule 'start' refers to itself (start -> start)"),
    ("start = a ;\na = O b ;\nb = a | O ;", GrammarError, "<string>:3:5: rule 'a' refers to itself (a -> b -> a)"),
    ("start = B-{T} ;", GrammarError, "<string>:1:9: variable {T} has no value"),
    ("start = any T: O ;", GrammarError, "<string>:1:9: variable {T} of 'any T:' appears in no label"),
    ("start = any T: Q-{T} ;", UnknownLabelError, "<string>:1:9: 'any T:' ranges over nothing: no label matches Q-{T}"),
    (
        "start = any T: B-{T} E-{T}? ;",
        UnknownLabelError,
        "<string>:1:22: E-{T} matches no label for any value of its variables",
    ),
    ("start = all T: [B-{T}] | [S-{T}] ;", UnknownLabelError, "<string>:1:26: [S-{T}] matches no label for any value"),
]


@pytest.mark.parametrize("text, error, message", COMPILE_ERRORS, ids=[t for t, _, _ in COMPILE_ERRORS])
def test_compile_error(text, error, message):
    grammar = parse_grammar(text)
    params = {"X": "PP"} if "{X}" in text else None
    with pytest.raises(error) as caught:
        compile_grammar(grammar, NP_VP, params=params)
    assert message in str(caught.value)


def test_unknown_labels_are_label_and_grammar_errors():
    with pytest.raises(LabelError):
        compiled("start = B-PP ;")
    with pytest.raises(GrammarError):
        compiled("start = B-PP ;")


def test_bad_arguments():
    grammar = parse_grammar("start = O ;")
    with pytest.raises(GrammarError, match="does not use the parameter"):
        compile_grammar(grammar, NP_VP, params={"X": "NP"})
    with pytest.raises(GrammarError, match="not an identifier"):
        compile_grammar(grammar, NP_VP, params={"B-X": "NP"})
    with pytest.raises(GrammarError, match="non-empty strings"):
        compile_grammar(parse_grammar("start = B-{X} ;"), NP_VP, params={"X": ""})
    with pytest.raises(GrammarError, match="mapping"):
        compile_grammar(grammar, NP_VP, params=["X"])
    with pytest.raises(GrammarError, match="no rule named 'other'"):
        compile_grammar(grammar, NP_VP, rule="other")
    with pytest.raises(GrammarError, match="expected a Grammar"):
        compile_grammar("start = O ;", NP_VP)
    with pytest.raises(LabelError, match="duplicate labels"):
        compile_grammar(grammar, ["O", "O"])
    with pytest.raises(GrammarError, match="a Grammar, an Acceptor or a pynini.Fst"):
        constrain(first_order(NP_VP), "start = O ;")
    with pytest.raises(GrammarError, match="no grammar file 'nope'"):
        load_grammar("nope")


# ---------------------------------------------------------------------------
# imports and files
# ---------------------------------------------------------------------------


def test_imports_relative_and_shipped(tmp_path):
    tmp_path = tmp_path.resolve()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "chunks.fgr").write_text("np = B-NP I-NP* ;\nvp = B-VP I-VP* ;\n")
    (tmp_path / "main.fgr").write_text(
        'import "lib/chunks.fgr" ;\nimport "lib/chunks" as c ;\nimport "iob2" ;\n'
        "start = (chunks.np | c.vp | O)+ & iob2.start ;\n"
    )
    grammar = load_grammar(tmp_path / "main.fgr")
    assert [item.alias for item in grammar.imports] == ["chunks", "c", "iob2"]
    assert grammar.import_map["iob2"].source == str(SHIPPED_DIR / "iob2.fgr")
    expected = defined(
        NP_VP,
        lambda s: (
            len(s) >= 1
            and re.fullmatch(r"(O|B-NP( I-NP)*|B-VP( I-VP)*)( (O|B-NP( I-NP)*|B-VP( I-VP)*))*", " ".join(s)) is not None
        ),
    )
    assert language(compile_grammar(grammar, NP_VP)) == expected
    # parse_grammar with a file source resolves imports next to it
    text = (tmp_path / "main.fgr").read_text()
    assert parse_grammar(text, source=str(tmp_path / "main.fgr")) == grammar


def test_local_file_shadows_shipped_grammar(tmp_path):
    (tmp_path / "iob2.fgr").write_text("start = O ;\n")
    (tmp_path / "main.fgr").write_text('import "iob2" ;\nstart = iob2.start ;\n')
    assert language(compile_grammar(load_grammar(tmp_path / "main.fgr"), NP_VP)) == {("O",)}


def test_imported_rules_see_the_callers_variables(tmp_path):
    (tmp_path / "seg.fgr").write_text("seg = B-{T} I-{T}* ;\n")
    (tmp_path / "main.fgr").write_text('import "seg" ;\nstart = any T: seg.seg O ;\n')
    assert language(compile_grammar(load_grammar(tmp_path / "main.fgr"), NP_VP)) == defined(
        NP_VP,
        lambda s: (
            len(s) >= 2 and s[-1] == "O" and s[0] in ("B-NP", "B-VP") and all(x == "I-" + s[0][2:] for x in s[1:-1])
        ),
    )


def test_errors_name_the_file_line_and_column(tmp_path):
    tmp_path = tmp_path.resolve()
    (tmp_path / "lib.fgr").write_text("# helpers\n\nnp = B-NP\n     I-XX* ;\n")
    (tmp_path / "main.fgr").write_text('import "lib" ;\nstart = lib.np ;\n')
    grammar = load_grammar(tmp_path / "main.fgr")
    with pytest.raises(UnknownLabelError, match=re.escape(f"{tmp_path / 'lib.fgr'}:4:6: unknown label 'I-XX'")):
        compile_grammar(grammar, NP_VP)
    (tmp_path / "broken.fgr").write_text("a = O ;\n\n  b = (O ;\n")
    (tmp_path / "user.fgr").write_text('\nimport "broken" ;\n')
    with pytest.raises(GrammarError, match=re.escape(f"{tmp_path / 'broken.fgr'}:3:10: expected ')'")):
        load_grammar(tmp_path / "user.fgr")


def test_import_cycles(tmp_path):
    tmp_path = tmp_path.resolve()
    (tmp_path / "a.fgr").write_text('import "b" ;\nstart = O ;\n')
    (tmp_path / "b.fgr").write_text('\nimport "a.fgr" ;\nx = O ;\n')
    with pytest.raises(
        GrammarError,
        match=re.escape(
            f"{tmp_path / 'b.fgr'}:2:1: import cycle: {tmp_path / 'a.fgr'} -> {tmp_path / 'b.fgr'} -> "
            f"{tmp_path / 'a.fgr'}"
        ),
    ):
        load_grammar(tmp_path / "a.fgr")
    (tmp_path / "self.fgr").write_text('import "self" ;\n')
    with pytest.raises(GrammarError, match="import cycle"):
        load_grammar(str(tmp_path / "self.fgr"))


def test_unreadable_import(tmp_path):
    (tmp_path / "bin.fgr").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "main.fgr").write_text('import "bin" ;\n')
    with pytest.raises(GrammarError, match="cannot read grammar"):
        load_grammar(tmp_path / "main.fgr")


# ---------------------------------------------------------------------------
# the shipped grammars against their definitions
# ---------------------------------------------------------------------------


def test_shipped_grammar_files():
    names = ("at_least_one", "at_most_one", "bioes", "iob2", "nest", "no_overlap", "second_order")
    assert shipped_grammars() == names
    for name in names:
        text = (SHIPPED_DIR / f"{name}.fgr").read_text()
        assert text.startswith(f"# {name}.fgr -- ")
        # the repository's grammars/ folder holds the same files
        assert (ROOT / "grammars" / f"{name}.fgr").read_text() == text
        assert name in (ROOT / "docs" / "grammars.md").read_text()
    assert sorted(p.stem for p in (ROOT / "grammars").glob("*.fgr")) == list(names)


def iob2_valid(seq):
    previous = ("O",) + seq[:-1]
    return all(not x.startswith("I-") or (p != "O" and p[2:] == x[2:]) for p, x in zip(previous, seq))


def bioes_valid(seq):
    inside = None  # type of the open segment
    for x in seq:
        prefix, kind = x[0], x[2:]
        if inside is not None:
            if prefix not in "IE" or kind != inside:
                return False
            inside = None if prefix == "E" else inside
        elif prefix in "IE":
            return False
        elif prefix == "B":
            inside = kind
    return inside is None


def segment_starts(seq, kind):
    return sum(x in (f"B-{kind}", f"S-{kind}") for x in seq)


@pytest.mark.parametrize("types", [["A"], ["A", "B"]])
def test_iob2_grammar(types):
    labels = iob2_labels(types)
    fst = compile_grammar(load_grammar("iob2"), labels)
    expected = defined(labels, iob2_valid)
    assert language(fst) == expected
    nonempty = expected - {()}
    assert topology_language(iob2(types)) == nonempty
    assert topology_language(constrain(first_order(labels), load_grammar("iob2"))) == nonempty


@pytest.mark.parametrize("types", [["A"], ["A", "B"]])
def test_bioes_grammar(types):
    labels = bioes_labels(types)
    length = MAX_LENGTH if len(types) == 1 else 4
    fst = compile_grammar(load_grammar("bioes"), labels)
    expected = defined(labels, bioes_valid, length)
    assert language(fst, length) == expected
    assert topology_language(bioes(types), length) == expected - {()}


@pytest.mark.parametrize("types", [["A"], ["A", "B"]])
def test_second_order_grammar(types):
    tags = iob2_labels(types)
    grammar = load_grammar("second_order")
    expected = defined(tags, lambda s: not any(x.startswith("I-") and p == "O" for p, x in zip(("O",) + s[:-1], s)))
    assert language(compile_grammar(grammar, tags)) == expected
    assert topology_language(second_order(tags)) == expected - {()}
    assert topology_language(constrain(first_order(tags), grammar)) == expected - {()}


@pytest.mark.parametrize("labels", [iob2_labels(["A", "B"]), bioes_labels(["A"]) + ("S-B",)])
def test_segment_count_grammars(labels):
    most, least = load_grammar("at_most_one"), load_grammar("at_least_one")
    for kind in ("A", "B"):
        params = {"X": kind}
        assert language(compile_grammar(most, labels, params=params), 4) == defined(
            labels, lambda s: segment_starts(s, kind) <= 1, 4
        )
        assert language(compile_grammar(least, labels, params=params), 4) == defined(
            labels, lambda s: segment_starts(s, kind) >= 1, 4
        )
    # templates applied to every type at once, and combined with validity
    scheme, valid = ("iob2", iob2_valid) if "I-B" in labels else ("bioes", bioes_valid)
    grammar = parse_grammar(
        f'import "at_most_one" as most ;\nimport "at_least_one" as least ;\n'
        f'import "{scheme}" as valid ;\n'
        "start = valid.start & (all X: most.start) & (with X = A: least.start) ;\n"
    )
    assert language(compile_grammar(grammar, labels), 4) == defined(
        labels, lambda s: valid(s) and segment_starts(s, "A") == 1 and segment_starts(s, "B") <= 1, 4
    )


def test_segment_count_grammar_errors():
    with pytest.raises(GrammarError, match="variable {X} has no value"):
        compile_grammar(load_grammar("at_most_one"), NP_VP)
    with pytest.raises(UnknownLabelError, match=r"the label class \[B-\{X\} S-\{X\}\] matches no label"):
        compile_grammar(load_grammar("at_least_one"), NP_VP, params={"X": "PP"})


# ---------------------------------------------------------------------------
# random grammars against the regular-expression oracle
# ---------------------------------------------------------------------------

LABELS = ("O", "B-A", "I-A", "B-B")
CHAR = {label: "abcd"[i] for i, label in enumerate(LABELS)}
UNIVERSE = frozenset("".join(p) for n in range(MAX_LENGTH + 1) for p in itertools.product("abcd", repeat=n))
CLASSES = ["[B-*]", "[I-*]", "[*-A]", "[O I-*]", "[^O]", "[^B-*]", "[^*-A I-*]", '["B-B" O]']
REPEATS = [(2, 2), (1, 3), (0, 2), (2, None), (0, 0), (1, 1)]


def class_chars(text):
    negated = text.startswith("[^")
    patterns = [p.strip('"') for p in text.strip("[^]").split()]
    matched = {label for label in LABELS if any(fnmatch.fnmatchcase(label, p) for p in patterns)}
    return "".join(CHAR[label] for label in LABELS if (label in matched) != negated)


def trees(with_ref):
    """Random expression trees (nested tuples); ("ref",) leaves stand for the rule `helper`."""
    leaves = [
        st.tuples(st.just("label"), st.sampled_from(LABELS), st.booleans()),
        st.tuples(st.just("class"), st.sampled_from(CLASSES)),
        st.just(("any",)),
    ]
    if with_ref:
        leaves.append(st.just(("ref",)))

    def extend(children):
        return st.one_of(
            st.tuples(st.sampled_from(["concat", "union", "and", "minus"]), children, children),
            st.tuples(st.sampled_from(["not", "star", "plus", "opt"]), children),
            st.tuples(st.just("rep"), children, st.sampled_from(REPEATS)),
        )

    return st.recursive(st.one_of(*leaves), extend, max_leaves=6)


BINARY = ("concat", "union", "and", "minus")
POSTFIX = {"star": "*", "plus": "+", "opt": "?"}
LEVEL = {"union": 0, "and": 1, "minus": 1, "concat": 2, "not": 3, "star": 4, "plus": 4, "opt": 4, "rep": 4}


def render_tree(node, need=0) -> str:
    """Grammar text with only the parentheses precedence requires."""
    kind = node[0]
    if kind == "label":
        text = f'"{node[1]}"' if node[2] else node[1]
    elif kind == "class":
        text = node[1]
    elif kind == "any":
        text = "."
    elif kind == "ref":
        text = "helper"
    elif kind in ("union", "concat"):
        separator = " | " if kind == "union" else " "
        text = separator.join(render_tree(c, LEVEL[kind]) for c in node[1:])
    elif kind in ("and", "minus"):
        text = f"{render_tree(node[1], 1)} {'&' if kind == 'and' else '-'} {render_tree(node[2], 2)}"
    elif kind == "not":
        text = "!" + render_tree(node[1], 3)
    elif kind == "rep":
        low, high = node[2]
        bounds = f"{{{low}}}" if low == high else f"{{{low},{'' if high is None else high}}}"
        text = render_tree(node[1], 4) + bounds
    else:
        text = render_tree(node[1], 4) + POSTFIX[kind]
    level = LEVEL.get(kind, 5)
    return f"({text})" if level < need else text


def regex(node, helper):
    """A Python regular expression for a tree without boolean operators (else None)."""
    kind = node[0]
    if kind == "label":
        return CHAR[node[1]]
    if kind == "class":
        return f"[{class_chars(node[1])}]"
    if kind == "any":
        return "[abcd]"
    if kind == "ref":
        return helper[1]
    parts = [regex(c, helper) for c in node[1 : 3 if kind in BINARY else 2]]
    if kind in ("and", "minus", "not") or None in parts:
        return None
    if kind == "concat":
        return "".join(f"(?:{p})" for p in parts)
    if kind == "union":
        return "|".join(f"(?:{p})" for p in parts)
    if kind == "rep":
        low, high = node[2]
        return f"(?:{parts[0]}){{{low},{'' if high is None else high}}}"
    return f"(?:{parts[0]})" + POSTFIX[kind]


def concat_sets(a, b):
    """Concatenation of string sets, cut at MAX_LENGTH (each u of ``a`` meets only the
    v of ``b`` short enough to follow it)."""
    by_length: list[list[str]] = [[] for _ in range(MAX_LENGTH + 1)]
    for v in b:
        by_length[len(v)].append(v)
    return frozenset(u + v for u in a for length in range(MAX_LENGTH - len(u) + 1) for v in by_length[length])


def power_sets(a, low, high):
    """Union of a^low .. a^high (high None: unbounded), cut at MAX_LENGTH."""
    out, current = set(), frozenset({""})
    for count in range(MAX_LENGTH + 1 if high is None else high + 1):
        if count >= low:
            out |= current
        current = concat_sets(current, a)
    return frozenset(out)


def oracle(node, helper) -> frozenset:
    """The strings of length <= 5 the tree denotes: re.fullmatch where possible, else set algebra."""
    pattern = regex(node, helper)
    if pattern is not None:
        compiled_pattern = re.compile(pattern)
        return frozenset(s for s in UNIVERSE if compiled_pattern.fullmatch(s))
    kind = node[0]
    if kind == "ref":
        return helper[2]
    if kind == "not":
        return UNIVERSE - oracle(node[1], helper)
    a = oracle(node[1], helper)
    if kind in ("star", "plus", "opt"):
        return power_sets(a, 1 if kind == "plus" else 0, 1 if kind == "opt" else None)
    if kind == "rep":
        return power_sets(a, *node[2])
    b = oracle(node[2], helper)
    return {
        "concat": concat_sets,
        "union": frozenset.union,
        "and": frozenset.intersection,
        "minus": frozenset.difference,
    }[kind](a, b)


@st.composite
def random_grammars(draw):
    """(grammar text, its language as strings of length <= 5)."""
    helper_tree = draw(trees(with_ref=False))
    helper = (helper_tree, regex(helper_tree, None), oracle(helper_tree, None))
    start_tree = draw(trees(with_ref=True))
    text = f"helper = {render_tree(helper_tree)} ;\nstart = {render_tree(start_tree)} ;\n"
    return text, oracle(start_tree, helper)


def as_string(labels):
    return "".join(CHAR[label] for label in labels)


@pytest.mark.slow
@oracle_settings(300)
@given(random_grammars())
def test_random_grammar_against_regex_oracle(grammar):
    text, expected = grammar
    parsed = parse_grammar(text)
    if not expected - {""}:
        with pytest.raises(GrammarError, match="accepts nothing"):
            compile_grammar(parsed, LABELS)
        return
    fst = compile_grammar(parsed, LABELS)
    assert {as_string(s) for s in language(fst)} == expected, text
    inside = min(expected, key=lambda s: (len(s), s))
    assert accepts(fst, [LABELS["abcd".index(c)] for c in inside])
    outside = sorted(UNIVERSE - expected, key=lambda s: (len(s), s))
    if outside:
        assert not accepts(fst, [LABELS["abcd".index(c)] for c in outside[0]])


# ---------------------------------------------------------------------------
# inference under random grammars: kernel vs brute force vs pynini
# ---------------------------------------------------------------------------


def random_potentials(topology, lengths, seed):
    rng = np.random.default_rng(seed)
    return fstcrf.Potentials(
        topology,
        rng.uniform(-3, 3, (sum(lengths), topology.num_states)),
        lengths,
        rng.uniform(-3, 3, topology.num_edges),
        rng.uniform(-1, 1, topology.num_states),
        rng.uniform(-1, 1, topology.num_states),
    )


def check_inference_under_grammar(pot, grammar, allowed, params=None):
    """Everything inference computes under ``grammar`` against brute force over
    ``pot``'s own topology filtered by ``allowed(label tuple)``, and against pynini."""
    topology = pot.topology
    restriction = restrict(pot, grammar, params=params)
    inner = restriction.potentials
    mapping = restriction.state_map
    np.testing.assert_array_equal(inner.topology.state_label, topology.state_label[mapping])
    acceptor = compile_grammar(grammar, topology.labels, params=params)
    best = fstcrf.viterbi(inner)
    decoded = decode(pot, grammar, params=params)
    np.testing.assert_array_equal(decoded.paths, mapping[best.paths])
    fb = fstcrf.forward_backward(inner)
    k = 4
    top = fstcrf.kbest(inner, k)
    draws = fstcrf.sample(inner, 12, seed=7)
    for b in range(pot.num_sequences):
        rows = pot.sentence(b)
        brute = BruteForce(
            topology,
            pot.emissions[rows],
            pot.transitions,
            np.where(topology.start, pot.start, 0),
            np.where(topology.final, pot.final, 0),
        )
        labels_of = [tuple(topology.labels[topology.state_label[s]] for s in path) for path in brute.paths]
        keep = np.array([allowed(seq) for seq in labels_of], dtype=bool)
        scores = brute.scores[keep]
        assert len(scores) > 0
        # Viterbi: the best allowed score, on an allowed path of that score
        assert math.isclose(best.scores[b], scores.max(), rel_tol=1e-12, abs_tol=1e-12)
        path = decoded.paths[rows]
        assert accepts(acceptor, [topology.labels[topology.state_label[s]] for s in path])
        assert math.isclose(brute.score_of(path), scores.max(), rel_tol=1e-12, abs_tol=1e-12)
        # log Z and marginals in the original state space
        peak = scores.max()
        log_z = peak + math.log(math.fsum(np.exp(scores - peak)))
        assert math.isclose(fb.log_z[b], log_z, rel_tol=1e-10, abs_tol=1e-10)
        probabilities = np.exp(scores - log_z)
        marginals = np.zeros((len(path), topology.num_states))
        np.add.at(marginals.T, mapping, fb.node_marginals[rows].T)
        kept_paths = brute.paths[keep]
        for t in range(len(path)):
            np.testing.assert_allclose(
                marginals[t], np.bincount(kept_paths[:, t], probabilities, topology.num_states), atol=1e-10
            )
        # k best: the top allowed scores, each path allowed
        found = min(k, len(scores))
        assert top.found[b] == found
        np.testing.assert_allclose(top.scores[b, :found], np.sort(scores)[::-1][:found], rtol=1e-12, atol=1e-12)
        for r in range(found):
            states = mapping[top.paths[r, rows]]
            assert allowed(tuple(topology.labels[topology.state_label[s]] for s in states))
        for r in range(len(draws)):
            states = mapping[draws[r, rows]]
            assert allowed(tuple(topology.labels[topology.state_label[s]] for s in states))
        # pynini on the exported lattice composed with the grammar
        lattice = to_fst(pot, b, arc_type="log64")
        both = pynini.intersect(lattice, pynini.arcmap(acceptor, map_type="to_log64").arcsort("ilabel"))
        distance = float(pynini.shortestdistance(both, delta=1e-30, reverse=True)[both.start()])
        assert math.isclose(-distance, log_z, rel_tol=1e-6, abs_tol=1e-6)
        lattice = to_fst(pot, b, arc_type="tropical")
        shortest = pynini.shortestpath(pynini.intersect(lattice, pynini.arcsort(acceptor, "ilabel")))
        it = shortest.paths()
        assert math.isclose(-float(it.weight()), scores.max(), rel_tol=1e-4, abs_tol=1e-4)
        ranked = np.sort(scores)[::-1]
        if len(ranked) == 1 or ranked[0] - ranked[1] > 1e-3:
            assert [topology.labels[k - 1] for k in it.ilabels()] == [
                topology.labels[topology.state_label[s]] for s in path
            ]


@pytest.mark.slow
@oracle_settings(120)
@given(random_grammars(), st.integers(0, 2**32 - 1), st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_inference_under_random_grammar(grammar, seed, lengths):
    text, strings = grammar
    assume(strings - {""})
    parsed = parse_grammar(text)
    pot = random_potentials(first_order(LABELS), lengths, seed)
    if not all(any(len(s) == n for s in strings) for n in lengths):
        with pytest.raises(InfeasibleError, match="allows no label sequence of length"):
            restrict(pot, parsed)
        return
    check_inference_under_grammar(pot, parsed, lambda seq: as_string(seq) in strings)


@pytest.mark.parametrize(
    "name, topology, params, allowed",
    [
        ("at_most_one", iob2(["A", "B"]), {"X": "A"}, lambda s: segment_starts(s, "A") <= 1),
        ("at_least_one", bioes(["A"]), {"X": "A"}, lambda s: segment_starts(s, "A") >= 1),
        ("iob2", second_order(iob2_labels(["A"])), None, iob2_valid),
        ("at_least_one", second_order(iob2_labels(["A"])), {"X": "A"}, lambda s: segment_starts(s, "A") >= 1),
    ],
)
def test_inference_under_shipped_grammar(name, topology, params, allowed):
    """Grammars over topologies whose states remember more than one label."""
    pot = random_potentials(topology, [4, 3, 1], 5)
    check_inference_under_grammar(pot, load_grammar(name), allowed, params)


def test_constrain_and_restrict_details():
    topology = iob2(["A", "B"])
    grammar = load_grammar("at_most_one")
    first = constrain(topology, grammar, params={"X": "A"})
    assert constrain(topology, grammar, params={"X": "A"}) is first  # cached
    assert constrain(topology, grammar, params={"X": "B"}) is not first
    assert first.name == "iob2&at_most_one"
    # an acceptor works too
    acceptor = compile_grammar(grammar, topology.labels, params={"X": "A"})
    assert topology_language(constrain(topology, acceptor)) == topology_language(first)
    pot = random_potentials(topology, [3], 1)
    np.testing.assert_array_equal(decode(pot, acceptor).paths, decode(pot, grammar, params={"X": "A"}).paths)
    with pytest.raises(InfeasibleError, match="allows no label sequence of length 1"):
        decode(random_potentials(first_order(LABELS), [1], 0), parse_grammar("start = . . ;"))
    # a topology whose label sequences do not determine its states
    twins = Topology(["a"], state_label=[0, 0], edge_src=[0, 1], edge_dst=[1, 0], start=[1, 1], final=[1, 1])
    with pytest.raises(TopologyError, match="two states with the same label"):
        state_map(twins, first_order(["a"]))
    with pytest.raises(TopologyError, match="other labels"):
        state_map(first_order(["a"]), first_order(["b"]))


# ---------------------------------------------------------------------------
# the documentation's examples parse
# ---------------------------------------------------------------------------


def test_documented_examples_parse():
    text = (ROOT / "docs" / "grammars.md").read_text()
    blocks = re.findall(r"```fgr\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    for block in blocks:
        parse_grammar(block, source="docs/grammars.md")


@pytest.mark.parametrize(
    "body, where",
    [
        ("(" * 400 + "O" + ")" * 400, "nests more than 100 levels"),
        ("!" * 400 + "O", "more than 100 nested '!'"),
        (" & ".join(["(O | B-NP)*"] * 600), "the chain of '&' and '-' nests more than 100 levels deep"),
        ("with X = NP: " * 300 + "O", "nests more than 100 levels"),
        ("O" + "?" * 495, "the chain of postfix operators ('*', '+', '?', '{m,n}') nests more than 100 levels"),
        ("((O" + "?" * 40 + ")" + "*" * 40 + ")" + "{2}" * 40, "the chain of postfix operators"),
    ],
    ids=["parentheses", "complements", "intersections", "bindings", "postfix-operators", "nested-postfix-chains"],
)
def test_a_grammar_nested_too_deeply_is_refused_where_it_goes_too_deep(body, where):
    with pytest.raises(GrammarError, match=rf"<string>:1:\d+: .*{re.escape(where)}"):
        parse_grammar(f"start = {body} ;")


def test_a_chain_of_postfix_operators_is_refused_at_the_operator_too_deep(tmp_path):
    """Each operator of ``O???...`` nests the tree a level deeper: 495 of them made a
    RecursionError where a topology hashed the grammar, 993 "nest too deeply to read;
    flatten its imports" without a line."""
    chained = tmp_path / "chained.fgr"
    chained.write_text("start = O" + "?" * 993 + " ;\n")
    with pytest.raises(GrammarError, match=rf"{re.escape(str(chained.resolve()))}:1:109: the chain of postfix"):
        load_grammar(chained)
    within = parse_grammar("start = (O | B-NP I-NP" + "*" * 98 + ") ;")  # nesting 2 and 98 operators: 100
    assert constrain(first_order(["O", "B-NP", "I-NP"]), within).num_states == 3


def test_a_chain_of_rules_too_long_to_compile_is_a_grammar_error():
    rules = "".join(f"r{n} = r{n + 1} ;\n" for n in range(600))
    grammar = parse_grammar(f"start = r0 ;\n{rules}r600 = O ;\n")
    with pytest.raises(GrammarError, match="refers to rules that refer to rules"):
        compile_grammar(grammar, ["O", "B-NP", "I-NP"])
    # a chain within the limit compiles
    rules = "".join(f"r{n} = r{n + 1} ;\n" for n in range(50))
    compile_grammar(parse_grammar(f"start = r0 ;\n{rules}r50 = O ;\n"), ["O", "B-NP", "I-NP"])


def test_grammar_text_without_its_semicolon_and_a_file_with_a_byte_order_mark(tmp_path):
    with pytest.raises(GrammarError, match=r"no grammar file 'start = O\*'.*end each rule with ';'"):
        fstcrf.decode_logits(np.zeros((2, 3)), ["O", "B-NP", "I-NP"], grammar="start = O*")
    marked = tmp_path / "marked.fgr"
    marked.write_bytes("\ufeffstart = O* ;\n".encode())
    assert load_grammar(marked).rule_names == ("start",)


@given(st.lists(st.sampled_from(["*", "-", "B", "I", "N", "P", "NP", "**"]), min_size=1, max_size=12))
@oracle_settings(150)
def test_a_class_of_many_wildcards_matches_as_fnmatch_does(pieces):
    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "NP-B"]
    pattern = "".join(pieces)
    matched = [label for label in labels if fnmatch.fnmatchcase(label, pattern)]
    grammar = parse_grammar(f"start = [{pattern}] | O ;")
    if not matched:
        with pytest.raises(UnknownLabelError, match="matches no label"):
            compile_grammar(grammar, labels)
        return
    compiled = compile_grammar(grammar, labels)
    assert [label for label in labels if accepts(compiled, [label])] == sorted({*matched, "O"}, key=labels.index)


def test_a_class_of_sixty_wildcards_is_matched_at_once():
    # trying every split of every '*' took 13.6 s for 30 of them, doubling with each
    labels = ["O", "B-ORGANIZATION", "I-ORGANIZATION"]
    compiled = compile_grammar(parse_grammar("start = [" + "*" * 60 + "ORG*] ;"), labels)
    assert accepts(compiled, ["I-ORGANIZATION"]) and not accepts(compiled, ["O"])
    with pytest.raises(UnknownLabelError, match=r"matches no label"):
        compile_grammar(parse_grammar("start = [" + "*" * 60 + "X] | O ;"), labels)
