"""API names written as roles are searchable: each leads to the page using it most."""

import json
import re

import pytest

pytestmark = pytest.mark.build


def test_an_api_role_gets_a_search_entry(built_copy):
    html = built_copy / "_build" / "html"
    search = json.loads(re.search(r"Search.setIndex\((.*)\)", (
        html / "searchindex.js").read_text(encoding="utf8"), re.S)[1])
    # Objects are grouped by the part of the name before the last dot.
    pages = {f"{prefix}.{entry[4]}".lstrip("."): search["docnames"][entry[0]]
             for prefix, entries in search["objects"].items() for entry in entries}
    assert pages.get("torch.linspace") == "test-page", pages  # its only page
    # The role shows as code, checked offline against the installed torch.
    assert "<code" in (html / "test-page.html").read_text(encoding="utf8")


def test_the_inventory_lists_every_api_name_the_pages_use():
    """Links to PyTorch's reference come from inventories/torch.inv in every build."""
    import zlib

    from autograd_docs.api_inventory import INVENTORY, names_used

    text = zlib.decompress(INVENTORY.read_bytes().split(b"zlib.\n", 1)[1]).decode()
    listed = {line.split(" ", 1)[0] for line in text.splitlines()}
    missing = sorted(name for _role, name in names_used() if name not in listed)
    assert not missing, f"not in {INVENTORY.name}: {missing}; run `make api-inventory`"


def test_api_names_link_to_pytorch_offline(built_copy):
    html = (built_copy / "_build" / "html" / "test-page.html").read_text(encoding="utf8")
    assert ('href="https://docs.pytorch.org/docs/stable/generated/torch.Tensor.backward.html'
            '#torch.Tensor.backward"') in html
