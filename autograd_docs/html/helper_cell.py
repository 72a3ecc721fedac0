"""The one cell of the site's helpers a download ships: only what its cells use.

A page's visible cells may import a snippet (``from figures import walk_graph``).
A reader's folder has no ``snippets/``, so the download defines what those
imports name in one cell, after the page's title and introduction: each name's
statement from the snippet's source, and what that statement needs in turn (the
module-level names it reads, followed through the snippets' own imports), in
the snippet's order. Nothing else of the file comes along: a page that uses one
function of ``figures.py`` ships that function, not 650 lines of figure styling.

A name whose statements need a module a reader does not have (the build engine,
Hypothesis, IPython in a script) cannot be shipped: ``needed`` says which module,
and the caller keeps the cell that wanted it out of the cells the reader runs.
Pure functions of source text: no Sphinx.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.metadata
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# What a reader installs to run the downloads (and Python's own library); a
# notebook runs in Jupyter, on IPython, which a script does without.
READER_PACKAGES = ("torch", "numpy", "matplotlib")
JUPYTER = "IPython"
FUTURE_ANNOTATIONS = "from __future__ import annotations"
# The form line Colab shows instead of the code, and what it says.
TITLE = "#@title The site's helpers this page uses: run this; you need not read it"


def reader_has(module: str, *, jupyter: bool = False) -> bool:
    """Whether a reader's Python imports ``module``: the standard library, or a
    module of a package the reader installs (``functorch`` comes with torch);
    with ``jupyter``, IPython too."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or (jupyter and top == JUPYTER):
        return True
    return any(dist.lower() in READER_PACKAGES for dist in _distributions().get(top, ()))


@functools.cache
def reader_distributions() -> frozenset[str]:
    """The distributions a reader's Python holds: the packages a reader installs,
    ipykernel (Jupyter's kernel), and what they require, by canonical name."""
    found: set[str] = set()
    pending = [*READER_PACKAGES, "ipykernel"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in found:
            continue
        found.add(name)
        for line in importlib.metadata.distribution(name).requires or []:
            required = Requirement(line)
            if required.marker is None or required.marker.evaluate({"extra": ""}):
                pending.append(required.name)
    return frozenset(found)


def distributions_asked_about(source: str) -> list[str]:
    """The installed distributions a reader lacks that a cell asks
    ``importlib.metadata`` about (a string naming one, in a cell importing it)."""
    if "importlib.metadata" not in source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    installed = {canonicalize_name(d.metadata["Name"]) for d in importlib.metadata.distributions()}
    named = {
        canonicalize_name(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"[A-Za-z0-9][\w.-]*", node.value)
    }
    return sorted((named & installed) - reader_distributions())


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Each importable top-level module's distributions (a scan of site-packages)."""
    return importlib.metadata.packages_distributions()


class NotShippable(Exception):
    """A name's statements import a module a reader does not have."""

    def __init__(self, module: str) -> None:
        super().__init__(module)
        self.module = module


@dataclass
class _Snippet:
    """One snippet's top-level statements, and which names each binds."""

    path: Path
    tree: ast.Module
    binder: dict[str, list[int]] = field(default_factory=dict)  # name -> statements
    lazy_annotations: bool = False

    @classmethod
    def read(cls, path: Path) -> _Snippet:
        tree = ast.parse(path.read_text(encoding="utf8"), filename=str(path))
        snippet = cls(path, tree)
        for index, node in enumerate(tree.body):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                snippet.lazy_annotations |= any(a.name == "annotations" for a in node.names)
                continue
            for name in _bound(node):
                snippet.binder.setdefault(name, []).append(index)
        return snippet


def _bound(node: ast.stmt) -> list[str]:
    """The module-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    targets = {
        ast.Assign: lambda n: n.targets,
        ast.AnnAssign: lambda n: [n.target],
        ast.AugAssign: lambda n: [n.target],
    }.get(type(node))
    if targets is None:
        return []
    return [
        leaf.id
        for target in targets(node)
        for leaf in ast.walk(target)
        if isinstance(leaf, ast.Name)
    ]


def _annotations(node: ast.stmt) -> list[ast.expr]:
    found: list[ast.expr] = []
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = inner.args
            every = [
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                arguments.vararg,
                arguments.kwarg,
            ]
            found += [a.annotation for a in every if a is not None and a.annotation]
            found += [inner.returns] if inner.returns else []
        elif isinstance(inner, ast.AnnAssign):
            found.append(inner.annotation)
    return found


def _read(node: ast.AST, skip: list[ast.expr] | None = None) -> set[str]:
    """The names a statement reads (``skip``: subtrees left out, its annotations)."""
    skipped = {id(inner) for tree in skip or [] for inner in ast.walk(tree)}
    return {
        inner.id
        for inner in ast.walk(node)
        if isinstance(inner, ast.Name) and id(inner) not in skipped
    }


def _imports(node: ast.stmt) -> list[str]:
    """Every module a statement imports, at its top or inside a function."""
    found = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import):
            found += [alias.name for alias in inner.names]
        elif isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
            found.append(inner.module)
    return found


class Helpers:
    """The statements of the snippets in ``snippets_dir`` that some names need."""

    def __init__(self, snippets_dir: Path) -> None:
        self.snippets_dir = snippets_dir
        self._snippets: dict[str, _Snippet] = {}
        self.taken: dict[str, set[int]] = {}  # module -> indexes of statements shipped
        self.order: list[str] = []  # modules, each after those it takes names from

    def is_snippet(self, module: str) -> bool:
        return (self.snippets_dir / f"{module}.py").is_file()

    def _snippet(self, module: str) -> _Snippet:
        if module not in self._snippets:
            self._snippets[module] = _Snippet.read(self.snippets_dir / f"{module}.py")
        return self._snippets[module]

    def lacking(self, imports: list[tuple[str, list[str]]]) -> str | None:
        """The first module a notebook cell's imports (module, names taken) need
        that a reader lacks, or ``None``: then the snippets' names they take, and
        what those need, are taken into the cell."""
        taken = {key: set(value) for key, value in self.taken.items()}
        order = list(self.order)
        try:
            for module, names in imports:
                if not self.is_snippet(module):
                    if not reader_has(module, jupyter=True):
                        raise NotShippable(module)
                    continue
                if not names:
                    raise ValueError(
                        f"a visible cell imports the whole snippet {module!r}: import the "
                        f"names it uses instead (from {module} import ...), so that the "
                        "download can ship just those"
                    )
                for name in names:
                    self._take(module, name)
        except NotShippable as lacking:
            self.taken, self.order = taken, order
            return lacking.module
        return None

    def _take(self, module: str, name: str) -> None:
        snippet = self._snippet(module)
        if name not in snippet.binder:
            if hasattr(builtins, name):
                return
            raise NameError(f"{snippet.path.name} defines no {name!r}")
        for index in snippet.binder[name]:
            self._take_statement(module, index)

    def _take_statement(self, module: str, index: int) -> None:
        snippet = self._snippet(module)
        chosen = self.taken.setdefault(module, set())
        if index in chosen:
            return
        chosen.add(index)
        node = snippet.tree.body[index]
        if isinstance(node, ast.ImportFrom) and node.module and self.is_snippet(node.module):
            chosen.discard(index)  # its names are defined by the cell itself
            for alias in node.names:
                self._take(node.module, alias.name)
            if node.module in self.order:
                self.order.remove(node.module)
            self.order.insert(self.order.index(module) if module in self.order else 0, node.module)
        else:
            lacking = [m for m in _imports(node) if not reader_has(m) and not self.is_snippet(m)]
            if lacking:
                raise NotShippable(lacking[0])
            skip = _annotations(node) if snippet.lazy_annotations else []
            for read in sorted(_read(node, skip) - set(_bound(node))):
                if read in snippet.binder:
                    self._take(module, read)
        if module not in self.order:
            self.order.append(module)
        self._take_side_effects(module)

    def _take_side_effects(self, module: str) -> None:
        """Module-level calls (``matplotlib.use``, ``rcParams.update``) whose every
        name is shipped already: they set up what the shipped code draws with."""
        snippet, chosen = self._snippet(module), self.taken[module]
        for index, node in enumerate(snippet.tree.body):
            if index in chosen or not isinstance(node, ast.Expr):
                continue
            if isinstance(node.value, ast.Constant):
                continue  # the docstring
            reads = _read(node)
            if reads and all(set(snippet.binder.get(name, ())) & chosen for name in reads):
                chosen.add(index)

    def cell_source(self) -> str:
        """The cell: Colab's form line, then each module's shipped statements."""
        parts = [TITLE]
        lazy = False
        for module in self.order:
            snippet = self._snippet(module)
            chosen = sorted(self.taken.get(module, ()))
            if not chosen:
                continue
            lines = snippet.path.read_text(encoding="utf8").splitlines()
            parts.append(f"# from the site's {snippet.path.name}")
            for index in chosen:
                node = snippet.tree.body[index]
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                parts.append("\n".join(lines[first - 1 : node.end_lineno]))
                lazy |= snippet.lazy_annotations and bool(
                    {name for a in _annotations(node) for name in _read(a)} - set(dir(builtins))
                )
        if lazy:  # an annotation names what the cell leaves out: keep it unevaluated
            parts.insert(1, FUTURE_ANNOTATIONS)
        return "\n\n".join(parts)

    def __bool__(self) -> bool:
        return any(self.taken.values())
