"""Mutation testing of the site: would the build notice if an example were wrong?

Usage: ``make mutants`` (``SEED=``, ``MUTANTS=`` per page, ``PAGE=docs/...md``), or
``python tools/mutants.py --seed 0 --per-page 3 [--page docs/how-to/x.md]``.

Each mutant is one small edit to a visible code cell of a page (never a hidden
check tagged ``remove-cell`` or ``remove-input``, never a cell tagged
``measured``): a number, an arithmetic or comparison operator, a function
swapped for its sibling (sin/cos, sum/mean, exp/log, ...), a flag flipped. An
edit that does not parse or does not change the code is skipped and another
drawn. Pages run in kernels of their own, so one build carries one mutant on
every page at once, and each failure is put down to its page by the path the
warning names: a run of N per page is a baseline build plus N incremental
builds, all in a scratch copy (tools/site_outputs.py) whose execution cache is
seeded from _build, so a page whose mutant is undone comes from the cache.

Each mutant is
  caught             the strict build failed on its page (a claim, a cell that
                     raised, a raises-exception cell that stopped raising);
  survived           the build passed, yet what the page prints changed;
  no visible change  outputs, figures and errors all identical.
Score: caught / (caught + survived). Seeded: the same seed draws the same
mutants, and a page draws the same ones whether or not PAGE= picks it.

Then the prose: each prose mutant is one edit inside a checked sentence (one a
hidden check quotes; the build's claims.json says which), in its words or its
TeX: a number, a sign, a comparison word (at most / at least, always / never,
more / less, <= / <). The check's quote binds the sentence, so every one must be
caught; one that survives is a sentence the page says twice, or a quote that
binds less than its sentence. Prose mutants run in rounds of their own (their
pages come from the cache: nothing re-executes) and are scored on their own.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

from autograd_docs.code_cells import CodeCell, code_cells
from autograd_docs.execution.claims import read_claims_file

from site_outputs import (
    MEASURED,
    as_text,
    build,
    changed_cells,
    copy_repo,
    executed_cells,
    executed_pages,
    machine_note,
    write,
)

HIDDEN = {"remove-cell", "remove-input", MEASURED}

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


@dataclass
class Mutant:
    page: str
    line: int
    edit: Edit
    old: str  # the replaced text
    code_line: str  # the page's line with the edit made
    outcome: str = ""
    why: str = ""

    def __str__(self) -> str:
        return (f"{self.page}:{self.line}: {self.edit.kind} {self.old!r} -> "
                f"{self.edit.replacement!r}   {self.code_line.strip()}")


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


def draw_mutants(page: str, text: str, seed: int, count: int) -> tuple[list[Mutant], int]:
    """Up to ``count`` mutants of a page, and how many draws were skipped.

    A kind is drawn first (so numbers, the commonest, do not crowd out the
    rest), then an edit of that kind. An edit whose cell no longer parses, or
    whose cell reads the same, is skipped and another drawn.
    """
    rng = random.Random(f"{seed}:{page}")
    starts = line_starts(text)
    cells = [cell for cell in code_cells(text) if not HIDDEN & set(cell.tags)]
    by_kind: dict[str, list[tuple[CodeCell, Edit]]] = {}
    for cell in cells:
        for edit in candidate_edits(cell, starts[cell.body_line - 1]):
            by_kind.setdefault(edit.kind, []).append((cell, edit))
    mutants, skipped = [], 0
    while len(mutants) < count and by_kind:
        kind = rng.choice(sorted(by_kind))
        cell, edit = by_kind[kind].pop(rng.randrange(len(by_kind[kind])))
        if not by_kind[kind]:
            del by_kind[kind]
        mutated = apply(text, edit)
        start = edit.start - starts[cell.body_line - 1]
        end = edit.end - starts[cell.body_line - 1]
        new_source = cell.source[:start] + edit.replacement + cell.source[end:]
        if new_source == cell.source or not compiles(new_source):
            skipped += 1
            continue
        line = text.count("\n", 0, edit.start) + 1
        line_start = mutated.rfind("\n", 0, edit.start) + 1
        line_end = mutated.find("\n", edit.start)
        mutants.append(Mutant(page, line, edit, text[edit.start:edit.end],
                              mutated[line_start:line_end if line_end >= 0 else None]))
    return mutants, skipped


def fenced_blocks(text: str) -> list[tuple[int, int]]:
    """Where the page's backtick fences (code cells, doctests, math) start and end."""
    blocks, opened = [], None
    for line in re.finditer(r"^(`{3,}|~{3,}).*$", text, re.MULTILINE):
        if opened is None:
            opened = line
        elif line.group().strip() == opened.group(1):
            blocks.append((opened.start(), line.end()))
            opened = None
    return blocks


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


def draw_prose_mutants(page: str, text: str, claims: list[dict], seed: int,
                       count: int) -> list[Mutant]:
    """Up to ``count`` prose mutants of a page, a kind drawn first, then an edit."""
    rng = random.Random(f"{seed}:prose:{page}")
    by_kind: dict[str, list[Edit]] = {}
    for edit in prose_edits(text, claims):
        by_kind.setdefault(edit.kind, []).append(edit)
    mutants = []
    while len(mutants) < count and by_kind:
        kind = rng.choice(sorted(by_kind))
        edit = by_kind[kind].pop(rng.randrange(len(by_kind[kind])))
        if not by_kind[kind]:
            del by_kind[kind]
        mutated = apply(text, edit)
        line_start = mutated.rfind("\n", 0, edit.start) + 1
        line_end = mutated.find("\n", edit.start)
        mutants.append(Mutant(page, text.count("\n", 0, edit.start) + 1,
                              Edit(f"prose {edit.kind}", edit.start, edit.end,
                                   edit.replacement),
                              text[edit.start:edit.end],
                              mutated[line_start:line_end if line_end >= 0 else None]))
    return mutants


def one_line(cell, width: int = 60) -> str:
    text = " ".join(as_text(cell.outputs).split()) if cell else "(no cell)"
    return repr(text if len(text) <= width else text[:width - 3] + "...")


# -- the run ---------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-page", type=int, default=3, help="mutants per page")
    parser.add_argument("--page", help="only this page (docs/...md)")
    parser.add_argument("--verbose", action="store_true", help="list the caught ones too")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args()
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="autograd-docs-mutants-"))
    print(f"scratch copy: {scratch}  seed {args.seed}, {args.per_page} per page  "
          f"({machine_note()})", flush=True)
    try:
        return run(args, copy_repo(scratch / "site"), started)
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def run(args, repo: Path, started: float) -> int:
    pages = executed_pages(repo)
    if args.page:
        if args.page not in pages:
            sys.exit(f"{args.page} is not an executed page: pick one of\n  "
                     + "\n  ".join(pages))
        pages = [args.page]
    original = {page: (repo / page).read_text(encoding="utf8") for page in pages}
    drawn = {}
    for page in pages:
        drawn[page], skipped = draw_mutants(page, original[page], args.seed, args.per_page)
        if skipped:
            print(f"  {page}: {skipped} edit(s) that did not parse or change the "
                  f"code skipped and redrawn", flush=True)

    baseline = build(repo)
    print(f"baseline: {baseline.seconds:.1f} s, {baseline.executed} page(s) executed",
          flush=True)
    if baseline.returncode or baseline.warnings:
        print(baseline.log[-4000:])
        sys.exit("the unchanged site must build cleanly first: fix that, then run this")
    before = executed_cells(repo)
    # What the unchanged site's checks quote: a code mutant that fails a page
    # stops its later checks, and the claims file would lose their quotes.
    recorded = read_claims_file(repo / "_build" / "doctrees")

    mutants = []
    for round_, batch in rounds(drawn, pages, args.per_page):
        result = build_round(repo, pages, original, batch)
        failures = result.warnings_by_page()
        after = executed_cells(repo)
        for page, mutant in batch.items():
            if page in failures:
                mutant.outcome, mutant.why = "caught", str(failures[page][0])
            elif changed_cells(before, after, {page}):
                old, new = changed_cells(before, after, {page})[0]
                mutant.outcome = "survived"
                mutant.why = (f"the cell at line {(old or new).line} printed "
                              f"{one_line(old)}, now {one_line(new)}")
            else:
                mutant.outcome = "no visible change"
        stray = [str(w) for page, ws in failures.items() if page not in batch for w in ws]
        if result.returncode and not any(page in failures for page in batch):
            stray.append(f"the build failed (exit {result.returncode}) naming no page")
        counts = {o: sum(m.outcome == o for m in batch.values())
                  for o in ("caught", "survived", "no visible change")}
        print(f"round {round_ + 1}: {len(batch)} mutants, {result.seconds:.1f} s, "
              f"{result.executed} page(s) executed: "
              + ", ".join(f"{n} {o}" for o, n in counts.items()), flush=True)
        for line in stray:
            print(f"  warning put down to no mutant: {line}")
        mutants += batch.values()

    prose = run_prose(args, repo, pages, original, recorded)
    return report(mutants, prose, args, time.perf_counter() - started)


def rounds(drawn: dict[str, list[Mutant]], pages: list[str], per_page: int):
    """(round, {page: its mutant}) for each round: one mutant per page that has one left."""
    for round_ in range(per_page):
        batch = {page: drawn[page][round_] for page in pages if len(drawn[page]) > round_}
        if not batch:
            return
        yield round_, batch


def build_round(repo: Path, pages: list[str], original: dict[str, str],
                batch: dict[str, Mutant]):
    """Each page with its mutant of this round, or as it was; then the strict build."""
    for page in pages:
        text = (original[page] if page not in batch
                else apply(original[page], batch[page].edit))
        if text != (repo / page).read_text(encoding="utf8"):
            write(repo / page, text)
    return build(repo)


def run_prose(args, repo: Path, pages: list[str], original: dict[str, str],
              recorded: dict[str, list[dict]]) -> list[Mutant]:
    """Rounds of prose mutants: a change inside a checked sentence must fail its page."""
    drawn = {page: draw_prose_mutants(
        page, original[page], recorded.get(str(Path(page).relative_to("docs").with_suffix("")),
                                           []), args.seed, args.per_page) for page in pages}
    mutants = []
    for round_, batch in rounds(drawn, pages, args.per_page):
        failures = build_round(repo, pages, original, batch).warnings_by_page()
        for page, mutant in batch.items():
            caught = page in failures
            mutant.outcome = "caught" if caught else "survived"
            mutant.why = str(failures[page][0]) if caught else "the build passed"
        print(f"prose round {round_ + 1}: {len(batch)} mutants: "
              f"{sum(m.outcome == 'caught' for m in batch.values())} caught", flush=True)
        mutants += batch.values()
    for page in pages:
        write(repo / page, original[page])
    return mutants


def report(mutants: list[Mutant], prose: list[Mutant], args, seconds: float) -> int:
    for label, chosen_mutants in (("code", mutants), ("prose", prose)):
        list_outcomes(label, chosen_mutants, args)
    for label, chosen_mutants in (("code", mutants), ("prose", prose)):
        print(score_line(label, chosen_mutants, args))
    print(f"{seconds:.0f} s in all ({machine_note()})")
    return 0


def list_outcomes(label: str, mutants: list[Mutant], args) -> None:
    ordered = sorted(mutants, key=lambda m: (m.page, m.line))
    for outcome in ("caught", "no visible change", "survived"):
        chosen = [m for m in ordered if m.outcome == outcome]
        if label == "prose" and outcome == "no visible change":
            continue  # a change to prose is always visible
        print(f"\n{label}, {outcome} ({len(chosen)}):")
        if outcome == "caught" and not args.verbose:
            print("  (--verbose lists them, with the warning that caught each)")
            continue
        for mutant in chosen:
            print(f"  {mutant}")
            if mutant.why:
                print(f"      {mutant.why[:160]}")


def score_line(label: str, mutants: list[Mutant], args) -> str:
    caught = sum(m.outcome == "caught" for m in mutants)
    survived = sum(m.outcome == "survived" for m in mutants)
    score = f"{caught / (caught + survived):.2f}" if caught + survived else "n/a"
    return (f"{label} score (seed {args.seed}, {args.per_page} per page"
            f"{', ' + args.page if args.page else ''}): caught / (caught + survived) = "
            f"{caught} / {caught + survived} = {score}; "
            f"{len(mutants) - caught - survived} with no visible change")


if __name__ == "__main__":
    sys.exit(main())
