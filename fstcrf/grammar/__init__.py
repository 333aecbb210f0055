"""Constraint grammars: a small regular language over labels, compiled with pynini.

A grammar file (extension ``.fgr``) is a list of imports and named rules::

    import "iob2" ;                       # a shipped grammar, used as iob2.<rule>
    inside = [I-*] ;                      # label class: every label matching a glob
    chunk = any T: B-{T} I-{T}* ;         # one chunk of any type T
    start = iob2.start & !(.* O inside .*) ;

Expressions use labels (``B-NP``, ``"odd,label"``), classes (``[B-*]``,
``[^O]``), the any-label ``.``, rule names, concatenation, ``|``, ``&``,
``-``, ``!``, ``*``, ``+``, ``?``, ``{m,n}``, parentheses, and variables
(``{T}`` inside labels, bound by ``any T:``, ``all T:``, ``with T = NP:`` or
compile-time parameters).  docs/grammars.md is the language reference.

:func:`parse_grammar` / :func:`load_grammar` build a :class:`Grammar` (the AST
with named rules); :func:`compile_grammar` turns a rule into a minimal
deterministic acceptor over label keys (label i = key i + 1);
:func:`constrain` intersects a topology with it; :func:`label_topology` builds
the topology of labels, an order, a tagging scheme and a grammar; :func:`restrict` and
:func:`decode` run inference under a grammar in the original state space.

The modules: :mod:`~fstcrf.grammar.nodes` (the syntax tree),
:mod:`~fstcrf.grammar.parser`, :mod:`~fstcrf.grammar.compiler`,
:mod:`~fstcrf.grammar.restriction` and :mod:`~fstcrf.grammar.declaration`; their public names are importable from here.
"""

from fstcrf.errors import UnknownLabelError
from fstcrf.moved import lazy_names
from fstcrf.grammar.nodes import (
    WILDCARD,
    AnyLabel,
    Binding,
    Complement,
    Concat,
    Difference,
    Grammar,
    Import,
    Intersection,
    LabelClass,
    Name,
    Node,
    Position,
    QualifiedRef,
    Quantifier,
    QuotedLabel,
    Repeat,
    Rule,
    Union,
    Var,
    render,
)
from fstcrf.grammar.parser import (
    EXTENSION,
    KEYWORDS,
    MAX_REPEAT,
    SHIPPED_DIR,
    load_grammar,
    parse_grammar,
    shipped_grammars,
)
from fstcrf.grammar.declaration import label_topology
from fstcrf.grammar.restriction import (
    Restriction,
    accepts,
    constrain,
    decode,
    restrict,
    restrict_to,
    restriction_maps,
    state_map,
    sum_per_original_edge,
)

__all__ = [
    "EXTENSION",
    "KEYWORDS",
    "MAX_REPEAT",
    "SHIPPED_DIR",
    "WILDCARD",
    "AnyLabel",
    "Binding",
    "Complement",
    "Concat",
    "Difference",
    "Grammar",
    "Import",
    "Intersection",
    "LabelClass",
    "Name",
    "Node",
    "Position",
    "QualifiedRef",
    "Quantifier",
    "QuotedLabel",
    "Repeat",
    "Restriction",
    "Rule",
    "Union",
    "UnknownLabelError",
    "Var",
    "accepts",
    "compile_grammar",
    "constrain",
    "decode",
    "label_topology",
    "load_grammar",
    "parse_grammar",
    "render",
    "restrict",
    "restrict_to",
    "restriction_maps",
    "shipped_grammars",
    "state_map",
    "sum_per_original_edge",
]

# the compiler needs pynini: imported on first use, so the rest of the package works without it
__getattr__, __dir__ = lazy_names(__name__, {"compile_grammar": "compiler"})
