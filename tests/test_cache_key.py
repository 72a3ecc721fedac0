"""The cache key reads every name a page's import statements import."""

from pathlib import Path

import pytest

from autograd_docs.execution import cache_key

SNIPPETS = Path(__file__).resolve().parents[1] / "snippets"


@pytest.mark.parametrize("source", [
    "import oracle\n",
    "import json, oracle\n",
    "import torch; import oracle\n",
    "import oracle as o\n",
    "x = 1\nif x:\n    from oracle import check_close\n",
    "from oracle import (\n    check_close,\n)\n",
])
def test_every_spelling_of_an_import_keys_the_snippet(source):
    keyed = [path.name for path in cache_key.snippets_imported(source, SNIPPETS)]
    assert keyed == ["families.py", "oracle.py"]


def test_the_engine_is_keyed_by_any_name_of_its_line():
    assert cache_key.engine_sources("import json, autograd_docs\n")
    assert not cache_key.engine_sources("import json, oracle\n")
