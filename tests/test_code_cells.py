"""The one reader of a page's code cells (``autograd_docs.code_cells``): myst-nb's
cells, at the lines the page has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograd_docs.code_cells import code_cells

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))

PAGE = """---
file_format: mystnb
---
# T

```{code-cell} ipython3
---
tags: [remove-cell]
---
x = 1
```

- a list item holding a fence myst-nb does not read as a cell:

  ```{code-cell} ipython3
  nested = True
  ```

````{code-cell} ipython3
:tags: [raises-exception]

print(x)
````
"""


def test_cells_options_and_lines():
    first, second = code_cells(PAGE)
    assert (first.fence_line, first.body_line, first.source, first.tags) == (
        6, 10, "x = 1", ("remove-cell",))
    assert (second.fence_line, second.body_line, second.source, second.tags) == (
        19, 22, "print(x)", ("raises-exception",))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_every_cell_is_where_the_page_has_it(page):
    lines = page.read_text(encoding="utf8").splitlines()
    for cell in code_cells("\n".join(lines)):
        assert lines[cell.fence_line - 1].lstrip("`~").startswith("{code-cell}")
        body = cell.source.split("\n")
        assert lines[cell.body_line - 1:cell.body_line - 1 + len(body)] == body
