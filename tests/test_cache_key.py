"""The cache key reads every name a page's import statements import."""

from pathlib import Path

import pytest

from autograd_docs.execution import cache_key

SNIPPETS = Path(__file__).resolve().parents[1] / "snippets"


@pytest.mark.parametrize(
    "source",
    [
        "import oracle\n",
        "import json, oracle\n",
        "import torch; import oracle\n",
        "import oracle as o\n",
        "x = 1\nif x:\n    from oracle import check_close\n",
        "from oracle import (\n    check_close,\n)\n",
    ],
)
def test_every_spelling_of_an_import_keys_the_snippet(source):
    keyed = [path.name for path in cache_key.snippets_imported(source, SNIPPETS)]
    assert keyed == ["families.py", "oracle.py"]


def test_the_engine_is_keyed_by_any_name_of_its_line():
    assert cache_key.engine_sources("import json, autograd_docs\n")
    assert not cache_key.engine_sources("import json, oracle\n")


def test_an_engine_module_a_snippet_imports_is_keyed():
    """oracle.py imports autograd_docs.claim_record: a page importing only oracle
    re-executes when that engine file changes, and not for the rest of the engine."""
    snippets = cache_key.snippets_imported("import oracle\n", SNIPPETS)
    assert [
        str(path.relative_to(cache_key.ENGINE))
        for path in cache_key.engine_sources("import oracle\n", snippets)
    ] == ["__init__.py", "claim_record.py"]
