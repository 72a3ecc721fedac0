"""Nothing re-read without cause: a rebuild with nothing changed reads no page,
writes no page and reports no changed configuration (autograd_docs/saved_config.py)."""

from __future__ import annotations

import pytest

from site_copy import build

pytestmark = pytest.mark.build


def test_a_rebuild_with_nothing_changed_reads_and_writes_nothing(warm_copy):
    # The copy's saved environment names the folder it was built in: this build
    # re-reads every page (from the cache) and saves an environment of its own.
    first = build(warm_copy)
    assert first.returncode == 0, first.log
    second = build(warm_copy)
    assert second.returncode == 0, second.log
    assert "configuration has changed" not in second.log, second.log
    assert "[config changed" not in second.log and "[new config]" not in second.log
    assert "updating environment: 0 added, 0 changed, 0 removed" in second.log, second.log
    assert "targets for 0 source files that are out of date" in second.log, second.log
    assert "reading sources... [" not in second.log, second.log
    assert "no targets are out of date." in second.log, second.log
    assert "writing output... [" not in second.log, second.log
    assert "Executing notebook" not in second.log, second.log
