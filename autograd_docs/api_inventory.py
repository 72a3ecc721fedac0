"""inventories/torch.inv: where each API name the pages use lives in PyTorch's reference.

intersphinx (conf.py) reads this file instead of fetching PyTorch's
``objects.inv``, so every build, offline included, links ``{py:func}`` and kin
to docs.pytorch.org. It holds only the names the pages use, each checked
against the installed torch (``api_roles.problem``) and placed by the rules
PyTorch's reference follows (``uri``). Refresh it after adding a name to a page
or changing the torch pin::

    make api-inventory

``tests/test_api_roles.py`` fails while a page uses a name the file lacks;
``make linkcheck ONLINE=1`` checks that every link it makes lands.
"""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "inventories" / "torch.inv"
BASE_URL = "https://docs.pytorch.org/docs/stable/"

# {py:func}`torch.autograd.grad`, {py:meth}`~torch.Tensor.backward`, {py:func}`text <name>`
ROLE = re.compile(r"\{py:(\w+)\}`(?:[^`<]*<)?~?([\w.]+)>?`")
# The role's object type in an inventory (what intersphinx matches a role against).
OBJECT_TYPES = {
    "func": "function",
    "meth": "method",
    "class": "class",
    "attr": "attribute",
    "mod": "module",
    "exc": "exception",
    "data": "data",
    "const": "data",
    "obj": "data",
}

# Pages PyTorch documents with autodoc on a page of their own, not autosummary's
# generated/<name>.html: the page, then the object's anchor on it.
OWN_PAGES = {
    "torch.utils.checkpoint": "checkpoint.html",
    "torch.autograd.graph.saved_tensors_hooks": "autograd.html",
}


def names_used(docs: Path = ROOT / "docs") -> set[tuple[str, str]]:
    """Every (role, name) written as a ``{py:...}`` role on a page."""
    return {
        (role, name)
        for page in sorted(docs.rglob("*.md"))
        for role, name in ROLE.findall(page.read_text(encoding="utf8"))
    }


def uri(role: str, name: str) -> str:
    """The address of ``name`` in PyTorch's reference, relative to BASE_URL.

    Most names have an autosummary page, generated/<name>.html; a module's is
    its section of the reference; torch.nn.Module's methods sit on its page.
    """
    for prefix, page in OWN_PAGES.items():
        if name == prefix or name.startswith(prefix + "."):
            return f"{page}#{name}"
    if role == "mod":
        return f"{name.split('.')[1]}.html#module-{name}"
    if name.startswith("torch.nn.Module."):
        return f"generated/torch.nn.Module.html#{name}"
    return f"generated/{name}.html#{name}"


def inventory(names: set[tuple[str, str]], version: str) -> bytes:
    """A Sphinx objects.inv (version 2) for ``names``."""
    lines = sorted(f"{name} py:{OBJECT_TYPES[role]} 1 {uri(role, name)} -" for role, name in names)
    header = (
        "# Sphinx inventory version 2\n# Project: PyTorch\n"
        f"# Version: {version}\n# The remainder of this file is compressed using zlib.\n"
    )
    return header.encode() + zlib.compress(("\n".join(lines) + "\n").encode(), 9)


def main() -> int:
    import torch

    from autograd_docs.api_roles import problem

    names = names_used()
    wrong = sorted(
        f"{{py:{role}}}`{name}`: {why}" for role, name in names if (why := problem(role, name))
    )
    if wrong:
        print(
            "not written: these names do not match the installed torch\n  " + "\n  ".join(wrong),
            file=sys.stderr,
        )
        return 1
    INVENTORY.parent.mkdir(exist_ok=True)
    INVENTORY.write_bytes(inventory(names, torch.__version__.split("+")[0]))
    print(f"{INVENTORY.relative_to(ROOT)}: {len(names)} names, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
