"""Reading grammars: the lexer, the recursive-descent parser (the language is
docs/grammars.md), imports resolved among the shipped grammars and beside the
importing file, and :func:`parse_grammar` / :func:`load_grammar`."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path


from fstcrf.errors import GrammarError
from fstcrf.grammar.nodes import (
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
    Template,
    Union,
    Var,
    WILDCARD,
    children,
    render,
    IDENTIFIER,
    is_identifier,
    merge_pieces,
)


#: The grammars fstcrf ships (fstcrf/grammars/*.fgr).
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "grammars"
#: The file extension of grammars, which an import may leave out.
EXTENSION = ".fgr"
#: The largest bound of a repetition ``x{m,n}``.
MAX_REPEAT = 1000
#: The deepest nesting of a rule's body (parentheses, '!', 'any', 'all', 'with',
#: postfix operators '*', '+', '?', '{m,n}' and operators '&' and '-', each of a chain
#: a level): deeper trees would exhaust Python's recursion when parsed, compiled or hashed.
MAX_NESTING = 100
#: Words that are not bare labels (quote a label spelled so).
KEYWORDS = frozenset({"import", "as", "any", "all", "with"})


# -- lexer ---------------------------------------------------------------------

_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PIECE = re.compile(r"[A-Za-z0-9_$]+|" + _VARIABLE.pattern)
_PUNCTUATION = "=;|&-!*+?(){},.:"
_CLASS_STOP = set(' \t\r\n[]"#')


@dataclass(frozen=True)
class _Token:
    kind: str  # word, string, qname, class, keyword, punct, end
    value: object
    pos: Position

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the file"
        if self.kind == "word":
            return f"'{render(self.value)}'"
        if self.kind == "string":
            return f'"{self.value}"'
        if self.kind == "qname":
            return f"'{self.value[0]}.{self.value[1]}'"
        if self.kind == "class":
            return f"the label class {self.value[2]}"
        return f"'{self.value}'"


class _Lexer:
    """Splits grammar text into tokens that carry their positions."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self.line_starts, offset)
        return Position(self.source, line, offset - self.line_starts[line - 1] + 1)

    def error(self, offset: int, message: str) -> GrammarError:
        return GrammarError(f"{self.position(offset)}: {message}")

    def skip_space(self, i: int) -> int:
        text = self.text
        while i < len(text):
            if text[i].isspace():
                i += 1
            elif text[i] == "#":
                end = text.find("\n", i)
                i = len(text) if end < 0 else end
            else:
                break
        return i

    def tokens(self) -> list[_Token]:
        text, out = self.text, []
        i = self.skip_space(0)
        while i < len(text):
            c = text[i]
            if c == '"':
                value, end = self.string(i)
                out.append(_Token("string", value, self.position(i)))
            elif c == "[":
                value, end = self.label_class(i)
                out.append(_Token("class", value, self.position(i)))
            elif _PIECE.match(text, i):
                token, end = self.word(i)
                out.append(token)
            elif c in _PUNCTUATION:
                self.check_glob_outside_class(i)
                out.append(_Token("punct", c, self.position(i)))
                end = i + 1
            else:
                raise self.error(i, f"unexpected character {c!r}")
            i = self.skip_space(end)
        out.append(_Token("end", None, self.position(len(text))))
        return out

    def check_glob_outside_class(self, i: int) -> None:
        text = self.text
        after_word = i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$}")
        token_start = i == 0 or text[i - 1].isspace() or text[i - 1] in "(|&=:!"
        glued_star = (text[i] == "-" and text.startswith("*", i + 1) and after_word) or (
            text[i] == "*" and token_start and text.startswith("-", i + 1) and _PIECE.match(text, i + 2) is not None
        )
        if glued_star:
            start = i
            while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "()|&;=":
                start -= 1
            end = i
            while end < len(text) and not text[end].isspace() and text[end] not in "()|&;":
                end += 1
            raise self.error(
                start,
                f"'{text[start:end]}' looks like a label pattern; patterns are "
                f"written in brackets, e.g. [{text[start:end]}]",
            )

    def string(self, i: int) -> tuple[str, int]:
        text, chars, j = self.text, [], i + 1
        while j < len(text) and text[j] not in '"\n':
            if text[j] == "\\" and j + 1 < len(text) and text[j + 1] != "\n":
                j += 1
            chars.append(text[j])
            j += 1
        if j >= len(text) or text[j] != '"':
            raise self.error(i, 'unterminated string (a quoted label ends with " on the same line)')
        value = "".join(chars)
        if not value or any(ch.isspace() for ch in value):
            raise self.error(
                i, f"invalid quoted label {text[i : j + 1]}: labels are non-empty and contain no whitespace"
            )
        return value, j + 1

    def word(self, i: int) -> tuple[_Token, int]:
        text, pieces, start = self.text, [], i
        while True:
            m = _PIECE.match(text, i)
            if m:
                pieces.append(Var(m.group(1)) if m.group(1) else m.group(0))
                i = m.end()
            elif pieces and text.startswith("-", i) and _PIECE.match(text, i + 1):
                pieces.append("-")
                i += 1
            else:
                break
        template = merge_pieces(pieces)
        pos = self.position(start)
        if is_identifier(template) and text.startswith(".", i) and IDENTIFIER.match(text, i + 1):
            name = IDENTIFIER.match(text, i + 1)
            return _Token("qname", (template[0], name.group(0)), pos), name.end()
        if is_identifier(template) and template[0] in KEYWORDS:
            return _Token("keyword", template[0], pos), i
        return _Token("word", template, pos), i

    def label_class(self, i: int) -> tuple[tuple, int]:
        text, start, patterns = self.text, i, []
        i += 1
        negated = text.startswith("^", i)
        if negated:
            i += 1
        while True:
            i = self.skip_space(i)
            if i >= len(text):
                raise self.error(start, "unterminated label class: missing ']'")
            if text[i] == "]":
                break
            if text[i] == "[":
                raise self.error(i, "'[' inside a label class (classes do not nest)")
            if text[i] == '"':
                value, i = self.string(i)
                patterns.append((value,))
                continue
            end = i
            while end < len(text) and text[end] not in _CLASS_STOP:
                end += 1
            patterns.append(self.glob(i, end))
            i = end
        source_text = text[start : i + 1]
        if not patterns:
            raise self.error(start, f"empty label class {source_text}")
        return (tuple(patterns), negated, source_text), i + 1

    def glob(self, i: int, end: int) -> Template:
        pieces, text = [], self.text
        while i < end:
            if text[i] == "*":
                pieces.append(WILDCARD)
                i += 1
            elif text[i] == "{":
                m = _VARIABLE.match(text, i, end)
                if not m:
                    raise self.error(i, "'{' in a label pattern starts a variable such as {T}")
                pieces.append(Var(m.group(1)))
                i = m.end()
            elif text[i] == "}":
                raise self.error(i, "unmatched '}' in a label pattern (quote labels that contain braces)")
            else:
                pieces.append(text[i])
                i += 1
        return merge_pieces(pieces)


# -- parser --------------------------------------------------------------------

_ATOM_START = {"word", "string", "qname", "class"}


class _Parser:
    """Recursive descent over the tokens; imports are loaded as they are parsed."""

    def __init__(self, text: str, source: str, base_dir: Path, loading: tuple[Path, ...]):
        self.lexer = _Lexer(text, source)
        self.tokens = self.lexer.tokens()
        self.index = 0
        self.source = source
        self.base_dir = base_dir
        self.loading = loading
        #: the nesting of the expression being parsed (see MAX_NESTING)
        self.depth = 0
        #: the deepest nesting of a node of the operand being parsed, postfix chains included
        self.deepest = 0

    # token helpers
    def peek(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, kind: str, value=None) -> bool:
        token = self.peek()
        return token.kind == kind and (value is None or token.value == value)

    def error(self, token: _Token, message: str) -> GrammarError:
        return GrammarError(f"{token.pos}: {message}")

    def expect_punct(self, value: str, context: str) -> _Token:
        if not self.at("punct", value):
            raise self.error(self.peek(), f"expected '{value}' {context}, found {self.peek().describe()}")
        return self.advance()

    def expect_identifier(self, what: str) -> _Token:
        token = self.peek()
        if token.kind != "word" or not is_identifier(token.value):
            hint = " (a keyword)" if token.kind == "keyword" else ""
            raise self.error(token, f"expected {what} (letters, digits and _), found {token.describe()}{hint}")
        return self.advance()

    # statements
    def grammar(self) -> Grammar:
        rules, imports = {}, {}
        while not self.at("end"):
            if self.at("keyword", "import"):
                item = self.import_statement()
                if item.alias in imports:
                    raise GrammarError(
                        f"{item.pos}: a grammar is already imported as '{item.alias}' "
                        f"(at {imports[item.alias].pos}); use 'as' to pick another name"
                    )
                imports[item.alias] = item
            else:
                rule = self.rule()
                if rule.name in rules:
                    raise GrammarError(f"{rule.pos}: rule '{rule.name}' is already defined at {rules[rule.name].pos}")
                rules[rule.name] = rule
        grammar = Grammar(self.source, tuple(rules.values()), tuple(imports.values()))
        for rule in grammar.rules:
            _check_qualified_refs(grammar, rule.body)
        return grammar

    def import_statement(self) -> Import:
        keyword = self.advance()
        if not self.at("string"):
            raise self.error(
                self.peek(), f"expected a quoted grammar name or path after 'import', found {self.peek().describe()}"
            )
        spec = self.advance().value
        path = _resolve_import(spec, self.base_dir, keyword.pos)
        alias = Path(spec).name.removesuffix(EXTENSION)
        if self.at("keyword", "as"):
            self.advance()
            alias = self.expect_identifier("a namespace name after 'as'").value[0]
        elif not IDENTIFIER.fullmatch(alias):
            raise self.error(keyword, f"'{alias}' is not a valid namespace name; add 'as <name>'")
        self.expect_punct(";", "after the import")
        if path in self.loading:
            cycle = " -> ".join(str(p) for p in self.loading[self.loading.index(path) :] + (path,))
            raise GrammarError(f"{keyword.pos}: import cycle: {cycle}")
        return Import(alias, _load(path, self.loading), keyword.pos)

    def rule(self) -> Rule:
        name = self.expect_identifier("a rule name or 'import'")
        self.expect_punct("=", f"after the rule name '{name.value[0]}'")
        body = self.expression()
        self.expect_punct(";", f"at the end of rule '{name.value[0]}'")
        return Rule(name.value[0], body, name.pos)

    # expressions, loosest first
    def expression(self) -> Node:
        first = self.peek()
        if self.depth >= MAX_NESTING:
            raise self.error(
                first, f"the expression nests more than {MAX_NESTING} levels deep; name its parts as rules"
            )
        self.nest()
        parts = [self.boolean()]
        while self.at("punct", "|"):
            self.advance()
            parts.append(self.boolean())
        self.depth -= 1
        return parts[0] if len(parts) == 1 else Union(first.pos, tuple(parts))

    def boolean(self) -> Node:
        """Operands joined by '&' and '-', left to right: each operator is a level above
        the operands before it, which its chain (x & y & z is (x & y) & z) moves one
        level deeper, and its right operand is parsed a level deeper; GrammarError at
        the operator, or the token of its right operand, that nests past MAX_NESTING."""
        enclosing_deepest, self.deepest = self.deepest, self.depth
        left = self.concatenation()
        chain_deepest = self.deepest
        while self.at("punct", "&") or self.at("punct", "-"):
            operator = self.advance()
            if chain_deepest + 1 > MAX_NESTING:
                raise self.error(
                    operator,
                    f"the chain of '&' and '-' nests more than {MAX_NESTING} levels deep (each operator a level "
                    "above the operands before it); name some of its operands as rules",
                )
            self.nest()
            self.deepest = self.depth
            right = self.concatenation()
            self.depth -= 1
            chain_deepest = max(chain_deepest + 1, self.deepest)
            left = (Intersection if operator.value == "&" else Difference)(operator.pos, left, right)
        self.deepest = max(enclosing_deepest, chain_deepest)
        return left

    def concatenation(self) -> Node:
        first = self.peek()
        parts = [self.unary()]
        while self.starts_operand():
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else Concat(first.pos, tuple(parts))

    def starts_operand(self) -> bool:
        token = self.peek()
        return (
            token.kind in _ATOM_START
            or (token.kind == "punct" and token.value in ".(!")
            or (token.kind == "keyword" and token.value in ("any", "all", "with"))
        )

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "punct" and token.value == "!":
            self.advance()
            if self.depth >= MAX_NESTING:
                raise self.error(token, f"more than {MAX_NESTING} nested '!'")
            self.nest()
            complement = Complement(token.pos, self.unary())
            self.depth -= 1
            return complement
        if token.kind == "keyword" and token.value in ("any", "all", "with"):
            return self.binder()
        return self.postfix()

    def binder(self) -> Node:
        keyword = self.advance()
        variable = self.expect_identifier(f"a variable name after '{keyword.value}'").value[0]
        if keyword.value == "with":
            self.expect_punct("=", f"after 'with {variable}'")
            value = self.peek()
            if value.kind not in ("word", "string"):
                raise self.error(value, f"expected the value of {variable}, found {value.describe()}")
            self.advance()
            self.expect_punct(":", f"after 'with {variable} = ...'")
            template = value.value if value.kind == "word" else (value.value,)
            return Binding(keyword.pos, variable, template, self.expression())
        self.expect_punct(":", f"after '{keyword.value} {variable}'")
        return Quantifier(keyword.pos, keyword.value, variable, self.expression())

    def nest(self) -> None:
        """One level deeper (the caller checked it against MAX_NESTING)."""
        self.depth += 1
        self.deepest = max(self.deepest, self.depth)

    def postfix(self) -> Node:
        """An atom and its chain of postfix operators, each a level above the atom's
        deepest node: GrammarError at the operator that nests past MAX_NESTING."""
        enclosing_deepest, self.deepest = self.deepest, self.depth
        node = self.atom()
        operand_deepest, operators = self.deepest, 0
        while self.peek().kind == "punct" and self.peek().value in "*+?{":
            token = self.advance()
            operators += 1
            if operand_deepest + operators > MAX_NESTING:
                raise self.error(
                    token,
                    f"the chain of postfix operators ('*', '+', '?', '{{m,n}}') nests more than {MAX_NESTING} "
                    "levels deep; write one repetition for the chain (x?? is x?, x{2}{3} is x{6})",
                )
            if token.value == "*":
                node = Repeat(token.pos, node, 0, None)
            elif token.value == "+":
                node = Repeat(token.pos, node, 1, None)
            elif token.value == "?":
                node = Repeat(token.pos, node, 0, 1)
            else:
                low, high = self.bounds(token)
                node = Repeat(token.pos, node, low, high)
        self.deepest = max(enclosing_deepest, operand_deepest + operators)
        return node

    def bounds(self, brace: _Token) -> tuple[int, int | None]:
        low = self.number(optional=True)
        if self.at("punct", ","):
            self.advance()
            high = self.number(optional=True)
            low = 0 if low is None else low
        elif low is None:
            raise self.error(self.peek(), f"expected a number in '{{m,n}}', found {self.peek().describe()}")
        else:
            high = low
        self.expect_punct("}", "to close the repetition")
        if high is not None and high < low:
            raise self.error(brace, f"repetition {{{low},{high}}} has its upper bound below its lower bound")
        if max(low, high or 0) > MAX_REPEAT:
            raise self.error(brace, f"repetition bounds are limited to {MAX_REPEAT}")
        return low, high

    def number(self, optional: bool) -> int | None:
        token = self.peek()
        if (
            token.kind == "word"
            and len(token.value) == 1
            and isinstance(token.value[0], str)
            and token.value[0].isdigit()
        ):
            self.advance()
            return int(token.value[0])
        if optional:
            return None
        raise self.error(token, f"expected a number, found {token.describe()}")

    def atom(self) -> Node:
        token = self.advance()
        if token.kind == "word":
            return Name(token.pos, token.value)
        if token.kind == "string":
            return QuotedLabel(token.pos, token.value)
        if token.kind == "qname":
            return QualifiedRef(token.pos, *token.value)
        if token.kind == "class":
            patterns, negated, text = token.value
            return LabelClass(token.pos, patterns, negated, text)
        if token.kind == "punct" and token.value == ".":
            return AnyLabel(token.pos)
        if token.kind == "punct" and token.value == "(":
            node = self.expression()
            self.expect_punct(")", "to close the parenthesis")
            return node
        if token.kind == "keyword":
            raise self.error(token, f"'{token.value}' is a keyword; quote it (\"{token.value}\") to use it as a label")
        raise self.error(token, f"expected a label, a label class, '.', a rule or '(', found {token.describe()}")


def _check_qualified_refs(grammar: Grammar, node: Node) -> None:
    if isinstance(node, QualifiedRef):
        target = grammar.import_map.get(node.namespace)
        if target is None:
            known = ", ".join(grammar.import_map) or "none"
            raise GrammarError(
                f"{node.pos}: '{node.namespace}.{node.name}' names no imported grammar "
                f"'{node.namespace}' (imports: {known}); write '{node.namespace} . {node.name}' "
                "with spaces for a label followed by any label"
            )
        if node.name not in target.rule_map:
            raise GrammarError(
                f"{node.pos}: grammar '{node.namespace}' ({target.source}) has no rule "
                f"'{node.name}' (rules: {', '.join(target.rule_names)})"
            )
    for child in children(node):
        _check_qualified_refs(grammar, child)


def shipped_grammars() -> tuple[str, ...]:
    """Names of the grammars shipped with fstcrf (usable as ``import "name"``)."""
    return tuple(sorted(p.stem for p in SHIPPED_DIR.glob(f"*{EXTENSION}")))


def _resolve_import(spec: str, base_dir: Path, pos: Position) -> Path:
    """A file relative to ``base_dir`` (with or without .fgr), else a shipped grammar."""
    for candidate in (base_dir / spec, base_dir / (spec + EXTENSION)):
        if candidate.is_file():
            return candidate.resolve()
    shipped = _shipped_path(spec)
    if shipped is not None:
        return shipped
    raise GrammarError(
        f"{pos}: cannot find grammar '{spec}' in {base_dir} nor among the shipped "
        f"grammars ({', '.join(shipped_grammars())})"
    )


def _shipped_path(name: str) -> Path | None:
    stem = name.removesuffix(EXTENSION)
    path = SHIPPED_DIR / (stem + EXTENSION)
    return path.resolve() if "/" not in stem and "\\" not in stem and path.is_file() else None


def _load(path: Path, loading: tuple[Path, ...]) -> Grammar:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark, as some editors write, is not text
    except (OSError, UnicodeDecodeError) as error:
        raise GrammarError(f"cannot read grammar {path}: {error}") from None
    return _parsed(_Parser(text, str(path), path.parent, loading + (path,)))


def _parsed(parser: _Parser) -> Grammar:
    """The grammar ``parser`` reads; GrammarError where its imports or its nesting
    go deeper than Python's recursion allows (MAX_NESTING keeps one body within it)."""
    try:
        return parser.grammar()
    except RecursionError:
        raise GrammarError(
            f"{parser.source}: the grammar and its imports nest too deeply to read; flatten its imports"
        ) from None


def parse_grammar(text: str, source: str = "<string>") -> Grammar:
    """Parse grammar text; ``source`` names it in messages and anchors relative imports
    (the current directory when it is not a file path, e.g. ``<string>``)."""
    if not isinstance(text, str):
        raise GrammarError(f"grammar text must be a string, got {type(text).__name__}")
    is_file = not source.startswith("<")
    base_dir = Path(source).resolve().parent if is_file else Path.cwd()
    loading = (Path(source).resolve(),) if is_file else ()
    return _parsed(_Parser(text, source, base_dir, loading))


def load_grammar(path_or_name) -> Grammar:
    """Load a grammar file, or a shipped grammar by name (``"iob2"``, ``"bioes"``, ...)."""
    path = Path(path_or_name)
    if path.is_file():
        return _load(path.resolve(), ())
    shipped = _shipped_path(str(path_or_name))
    if shipped is None:
        raise GrammarError(
            f"no grammar file {path_or_name!r} and no shipped grammar of that name "
            f"(shipped: {', '.join(shipped_grammars())})"
        )
    return _load(shipped, ())
