"""API names written as roles: linked, checked against the installed torch, searchable.

``{py:func}`torch.autograd.grad``` and its kin link to PyTorch's reference
through intersphinx, in every build: it reads the inventory kept in
``inventories/torch.inv`` (``api_inventory.py``; ``make api-inventory``).
Every name is also looked up in the installed torch, linked or not: it must
import and be what the role says (a function for ``func``, a method for
``meth``, a class for ``class``), or the build fails naming the page and line
(``AuthorError.UNKNOWN_API``). A name the inventory lacks shows as code. The
page that uses a name most becomes its entry in the search index, so a search
for ``torch.where`` finds that page first.
"""

from __future__ import annotations

import importlib
import inspect
from collections import Counter
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.domains import Domain, ObjType
from sphinx.transforms import SphinxTransform

from autograd_docs import build_state
from autograd_docs.diagnostics import AuthorError, report
from autograd_docs.execution.cache_key import digest
from autograd_docs.kept_record import KeptRecord, source_digest

# What each role promises about the object it names, and how to say it.
KINDS = {
    "func": (
        "a function",
        lambda parent, obj: (
            callable(obj) and not inspect.isclass(obj) and not inspect.isclass(parent)
        ),
    ),
    "meth": ("a method", lambda parent, obj: inspect.isclass(parent) and callable(obj)),
    "class": ("a class", lambda parent, obj: inspect.isclass(obj)),
    "exc": (
        "an exception",
        lambda parent, obj: inspect.isclass(obj) and issubclass(obj, BaseException),
    ),
    "mod": ("a module", lambda parent, obj: inspect.ismodule(obj)),
    "attr": ("an attribute", lambda parent, obj: True),
    "data": ("a value", lambda parent, obj: True),
    "obj": ("an object", lambda parent, obj: True),
    "const": ("a value", lambda parent, obj: True),
}


@cache
def look_up(name: str) -> tuple[object, object] | str:
    """(parent, object) that ``name`` names in the installed packages, or why not.

    Resolved as the expression ``name`` would be after ``import`` of its first
    part: attributes first, a submodule only where no attribute has the name
    (``torch.autograd.gradcheck`` is the function, not its module).
    """
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return f"there is no module {parts[0]!r}"
    parent = None
    for index, attribute in enumerate(parts[1:], 1):
        if not hasattr(obj, attribute) and inspect.ismodule(obj):
            try:
                importlib.import_module(".".join(parts[: index + 1]))
            except ImportError:
                pass
        if not hasattr(obj, attribute):
            return f"{'.'.join(parts[:index])} has no attribute {attribute!r}"
        parent, obj = obj, getattr(obj, attribute)
    return parent, obj


def describe(parent, obj) -> str:
    for kind in ("exc", "class", "mod", "meth", "func"):
        if KINDS[kind][1](parent, obj):
            return KINDS[kind][0]
    return "a value"


def problem(role: str, name: str) -> str | None:
    """Why ``{py:<role>}`name``` names nothing the installed packages have, or
    something of another kind; None if it is fine."""
    found = look_up(name)
    if isinstance(found, str):
        return found
    if not KINDS[role][1](*found):
        return f"it is {describe(*found)}, not {KINDS[role][0]}"
    return None


# "role name" -> problem() of it, kept in the doctrees folder from one build to
# the next while the installed packages and this module stay the same
# (kept_record.py): looking a name up imports torch into the build process (over
# a second), which a rebuild then skips. References are resolved in the main
# process, also with -j, so it sees them all.
CHECKED_FILE = "api-names-checked.json"
_THIS_MODULE = source_digest(__file__)


def _load_checked(app: Sphinx) -> None:
    build_state.of(app).api_names = KeptRecord(
        Path(app.doctreedir) / CHECKED_FILE,
        rules=digest([_THIS_MODULE, app.config.autograd_docs_environment]),
        name="checked",
        what="every API name's check",
    )


def _save_checked(app: Sphinx, exception: Exception | None) -> None:
    record = build_state.of(app).api_names
    if record is not None:
        record.save(record.entries)


def _is_api_role(node) -> bool:
    return node.get("refdomain") == "py" and node.get("reftype") in KINDS


def _check_api_role(app: Sphinx, env, node, contnode) -> None:
    """Before intersphinx links a ``py`` role: the name must be what its role says."""
    if not _is_api_role(node):
        return None
    role, target = node["reftype"], node["reftarget"]
    checked = build_state.of(app).api_names
    known = checked.entries if checked is not None else {}
    key = f"{role} {target}"
    if key not in known:
        known[key] = problem(role, target)
    why = known[key]
    if why:
        report(AuthorError.UNKNOWN_API, node, role=role, target=target, why=why)
    return None  # on to intersphinx


def _show_as_code(app: Sphinx, env, node, contnode):
    """A ``py`` role the inventory does not have (checked above): code, no link."""
    return contnode if _is_api_role(node) else None


class ApiDomain(Domain):
    """The search index's entry for each API name: the page that uses it most."""

    name = "api"
    label = "API names used on this site"
    object_types = {"name": ObjType("API name", "name")}
    initial_data = {"uses": {}}  # name -> {docname: [anchor, ...]}

    def clear_doc(self, docname: str) -> None:
        for pages in self.data["uses"].values():
            pages.pop(docname, None)

    def merge_domaindata(self, docnames, otherdata) -> None:
        for name, pages in otherdata["uses"].items():
            for docname in docnames:
                if docname in pages:
                    self.data["uses"].setdefault(name, {})[docname] = pages[docname]

    def resolve_any_xref(self, *args):
        return []

    def get_objects(self):
        for name, pages in sorted(self.data["uses"].items()):
            if not pages:
                continue
            counts = Counter({docname: len(anchors) for docname, anchors in pages.items()})
            docname = max(sorted(counts), key=counts.__getitem__)
            yield name, name, "name", docname, pages[docname][0], 1


class IndexApiRoles(SphinxTransform):
    """A target where each API role is used, for the search index's entry.

    No general-index entry yet: with every use of ~130 names listed, Sphinx's
    genindex table runs past a 375 px phone's edge (tests/browser). Runs before
    Sphinx's domains collect the page's objects (``SphinxDomains``, 850).
    """

    default_priority = 840

    def apply(self, **kwargs) -> None:
        uses = self.env.get_domain("api").data["uses"]
        refs = list(self.document.findall(addnodes.pending_xref))
        for number, ref in enumerate(refs):
            if ref.get("refdomain") != "py" or ref.get("reftype") not in KINDS:
                continue
            name = ref["reftarget"]
            anchor = f"api-{nodes.make_id(name)}-{number}"
            ref.parent.insert(ref.parent.index(ref), nodes.target("", "", ids=[anchor]))
            uses.setdefault(name, {}).setdefault(self.env.docname, []).append(anchor)


def setup(app: Sphinx) -> dict:
    app.add_domain(ApiDomain)
    app.add_transform(IndexApiRoles)
    # Around intersphinx (priority 500): every name checked, the unlinked shown as code.
    app.connect("missing-reference", _check_api_role, priority=400)
    app.connect("missing-reference", _show_as_code, priority=900)
    app.connect("builder-inited", _load_checked)
    app.connect("build-finished", _save_checked)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 3}
