"""The edits ``make mutants`` makes: to a page's visible code, and to its checked prose.

A code edit (``candidate_edits``) changes a number, an arithmetic or comparison
operator, a function for its sibling, or a flag, where IPython runs the cell's
line as written; never a seed or a figure's styling. A prose edit
(``prose_edits``) changes a number, a sign or a comparison word inside a
sentence a hidden check quotes. Offsets are in the page's text.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from IPython.core.inputtransformer2 import TransformerManager

from autograd_docs.code_cells import CodeCell

# Functions swapped for a sibling with the same signature.
SIBLINGS = dict(
    pair
    for a, b in [
        ("sin", "cos"), ("sinh", "cosh"), ("sum", "mean"), ("exp", "log"),
        ("log1p", "expm1"), ("max", "min"), ("amax", "amin"), ("argmax", "argmin"),
        ("tanh", "sigmoid"), ("zeros", "ones"), ("zeros_like", "ones_like"),
        ("cumsum", "cumprod"), ("floor", "ceil"), ("sqrt", "square"),
        ("softmax", "log_softmax"), ("jacrev", "jacfwd"), ("relu", "abs"),
    ]
    for pair in ((a, b), (b, a))
)
ARITHMETIC = {ast.Add: ["-"], ast.Sub: ["+"], ast.Mult: ["/"], ast.Div: ["*"],
              ast.Pow: ["*"], ast.MatMult: ["*"], ast.FloorDiv: ["/"]}
SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
          ast.MatMult: "@", ast.FloorDiv: "//", ast.Lt: "<", ast.LtE: "<=",
          ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
          ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
COMPARISON = {ast.Lt: ["<=", ">"], ast.LtE: ["<", ">="], ast.Gt: [">=", "<"],
              ast.GtE: [">", "<="], ast.Eq: ["!="], ast.NotEq: ["=="],
              ast.Is: ["is not"], ast.IsNot: ["is"], ast.In: ["not in"],
              ast.NotIn: ["in"]}
# Numbers and flags whose change is no mistake to catch: seeds and print or figure
# styling (an axis's scale included). For the same reason rand and randn are not
# swapped: which distribution a random example is drawn from is, like its seed,
# no claim a page makes (a page that states one checks it).
NOT_A_MISTAKE_CALLS = {"manual_seed", "seed", "set_printoptions", "set_num_threads"}
NOT_A_MISTAKE_KEYWORDS = {"figsize", "dpi", "fontsize", "linewidth", "lw", "alpha",
                          "markersize", "ms", "pad", "labelpad", "zorder", "rotation",
                          "precision", "linewidths", "ncols", "nrows", "ncol",
                          "logx", "logy"}


# Inside a checked sentence: what a wrong number, sign or comparison looks like.
PROSE_SWAPS = [
    ("comparison", r"\bat most\b", "at least"), ("comparison", r"\bat least\b", "at most"),
    ("comparison", r"\balways\b", "never"), ("comparison", r"\bnever\b", "always"),
    ("comparison", r"\bmore\b", "less"), ("comparison", r"\bless\b", "more"),
    ("comparison", r"\bfewer\b", "more"), ("comparison", r"\blarger\b", "smaller"),
    ("comparison", r"\bsmaller\b", "larger"), ("comparison", r"\\le\b", "\\lt"),
    ("comparison", r"\\ge\b", "\\gt"), ("comparison", r"<=", "<"),
    ("comparison", r">=", ">"), ("comparison", r"(?<![<>=-])<(?![=<])", "<="),
    ("comparison", r"(?<![<>=-])>(?![=>])", ">="),
    ("sign", r"(?<=[\s($])-(?=[\d\w\\])", ""), ("sign", r"\s\+\s", " - "),
    ("sign", r"(?<=\s)-(?=\s)", "+"), ("sign", r"−", ""),
]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")  # not the 64 of float64


@dataclass(frozen=True)
class Edit:
    kind: str  # number, arithmetic, comparison, function, flag
    start: int  # offsets in the page's text
    end: int
    replacement: str


# -- the cells of a page ---------------------------------------------------------------

def line_starts(text: str) -> list[int]:
    """The offset in ``text`` of each of its lines (the first is line 1)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def python_of(source: str) -> str:
    """A cell's code as IPython runs it (magics made into calls)."""
    return TransformerManager().transform_cell(source)


def compiles(source: str) -> bool:
    try:
        compile(python_of(source), "<cell>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


# -- the edits -------------------------------------------------------------------------

def candidate_edits(cell: CodeCell, body_start: int) -> list[Edit]:
    """Every edit of the kinds above that could be made to one cell, whose code
    starts at offset ``body_start`` of the page's text."""
    source = cell.source
    try:
        python = python_of(source)
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines(keepends=True)
    python_lines = python.splitlines(keepends=True)
    if len(lines) != len(python_lines):
        return []  # a cell magic: positions would not map back
    # Lines IPython left alone (a line magic becomes a call): edits only there.
    same = {n + 1 for n, (a, b) in enumerate(zip(lines, python_lines))
            if a.rstrip("\n") == b.rstrip("\n")}
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # AST columns count UTF-8 bytes
        line = lines[lineno - 1].encode()
        return body_start + starts[lineno - 1] + len(line[:col].decode())

    def text(a: int, b: int) -> str:
        return source[a - body_start:b - body_start]

    parents = {child: node for node in ast.walk(tree)
               for child in ast.iter_child_nodes(node)}

    def styling(node) -> bool:
        while node in parents:
            parent = parents[node]
            if isinstance(parent, ast.keyword) and parent.arg in NOT_A_MISTAKE_KEYWORDS:
                return True
            if isinstance(parent, ast.Call):
                func = parent.func
                name = getattr(func, "attr", getattr(func, "id", ""))
                if name in NOT_A_MISTAKE_CALLS:
                    return True
            node = parent
        return False

    def between(left, right, pattern: str) -> tuple[int, int, str] | None:
        """The operator between two nodes (parentheses and spaces around it)."""
        a = offset(left.end_lineno, left.end_col_offset)
        b = offset(right.lineno, right.col_offset)
        match = re.fullmatch(rf"[\s()\\]*({pattern})[\s()\\]*", text(a, b))
        return (a + match.start(1), a + match.end(1), match[1]) if match else None

    # Python 3.11 gives nodes inside f-strings positions that are not theirs.
    in_fstrings = {inner for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                   for inner in ast.walk(node)}
    edits = []
    for node in ast.walk(tree):
        if node in in_fstrings or not all(
                line in same for line in
                range(getattr(node, "lineno", 0), getattr(node, "end_lineno", 0) + 1)):
            continue
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            a = offset(node.lineno, node.col_offset)
            b = offset(node.end_lineno, node.end_col_offset)
            if styling(node) or not re.fullmatch(r"[0-9][0-9_.eExXa-fA-FoObBjJ+-]*", text(a, b)):
                continue
            value = node.value
            new = (repr(value + 1) if isinstance(value, int)
                   else repr(value * 2 if value else 1.0))
            edits.append(Edit("number", a, b, new))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            a = offset(node.lineno, node.col_offset)
            if not styling(node) and text(a, a + len(str(node.value))) == str(node.value):
                edits.append(Edit("flag", a, a + len(str(node.value)),
                                  str(not node.value)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            a = offset(node.lineno, node.col_offset)
            b = offset(node.operand.lineno, node.operand.col_offset)
            kind, pattern = (("arithmetic", r"-\s*") if isinstance(node.op, ast.USub)
                             else ("flag", r"not\s+"))
            if re.fullmatch(pattern, text(a, b)):
                edits.append(Edit(kind, a, b, ""))  # drop the minus, or the not
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITHMETIC:
            left, right = ((node.left, node.right) if isinstance(node, ast.BinOp)
                           else (node.target, node.value))
            symbol = re.escape(SYMBOL[type(node.op)])
            augmented = isinstance(node, ast.AugAssign)
            found = between(left, right, symbol + ("=" if augmented else ""))
            if found:
                for new in ARITHMETIC[type(node.op)]:
                    edits.append(Edit("arithmetic", found[0], found[1],
                                      new + ("=" if augmented else "")))
        elif isinstance(node, ast.Compare):
            for left, op, right in zip([node.left, *node.comparators], node.ops,
                                       node.comparators):
                found = between(left, right, SYMBOL[type(op)].replace(" ", r"\s+"))
                if found:
                    edits += [Edit("comparison", found[0], found[1], new)
                              for new in COMPARISON[type(op)]]
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            b = offset(node.end_lineno, node.end_col_offset)
            if name in SIBLINGS and text(b - len(name), b) == name:
                edits.append(Edit("function", b - len(name), b, SIBLINGS[name]))
    return edits


def apply(text: str, edit: Edit) -> str:
    return text[:edit.start] + edit.replacement + text[edit.end:]


@functools.lru_cache(maxsize=4)  # a page's quotes are looked up one after another
def fenced_blocks(text: str) -> tuple[tuple[int, int], ...]:
    """Where the page's backtick fences (code cells, doctests, math) start and end."""
    blocks, opened = [], None
    for line in re.finditer(r"^(`{3,}|~{3,}).*$", text, re.MULTILINE):
        if opened is None:
            opened = line
        elif line.group().strip() == opened.group(1):
            blocks.append((opened.start(), line.end()))
            opened = None
    return tuple(blocks)


def quote_spans(text: str, quote: str) -> list[tuple[int, int]]:
    """Where a check's quote stands in the page's prose (any whitespace between its
    words), never in a code cell: the check's own ``quote=`` is code."""
    pattern = r"\s+".join(re.escape(word) for word in quote.split())
    code = fenced_blocks(text)
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)
            if not any(a <= m.start() < b for a, b in code)]


def prose_edits(text: str, claims: list[dict]) -> list[Edit]:
    """Every number, sign or comparison edit inside a sentence a check quotes."""
    edits, seen = [], set()
    for claim in claims:
        for start, end in quote_spans(text, claim["quote"]):
            span = text[start:end]
            for match in NUMBER.finditer(span):
                value = match.group()
                new = str(int(value) + 1) if value.isdigit() else f"{float(value) * 2:g}"
                edits.append(Edit("number", start + match.start(), start + match.end(), new))
            for kind, pattern, new in PROSE_SWAPS:
                edits += [Edit(kind, start + m.start(), start + m.end(), new)
                          for m in re.finditer(pattern, span)]
    return [e for e in edits if (e.start, e.end) not in seen and not seen.add((e.start, e.end))]
