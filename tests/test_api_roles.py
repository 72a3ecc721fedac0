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
