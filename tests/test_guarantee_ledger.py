"""bench/README.md's ledger names the test that holds each guarantee the suite had
at ``d59c23e`` (issue 41): a test renamed, merged or removed must be moved there too,
or the ledger sends a maintainer to a test that no longer exists. No build."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER_HEADING = "#### Every guarantee the suite had at `d59c23e`"
# The tests, as "- `<file under tests/>`: name, name, ..." (``test_`` left off).
STILL_NAMED = re.compile(r"^- `([\w/]+\.py)`: (.+)$", re.MULTILINE)
# A name in backticks, a parametrized id after it allowed: in the table's "held
# now by" column each must be a test (``test_`` left off or not) or a fixture.
NAME = re.compile(r"`([a-z][a-z0-9_]*)(?:\[[^`]*\])?`")


def ledger() -> str:
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf8")
    start = text.index(LEDGER_HEADING)
    return text[start:text.index("\n#", start + len(LEDGER_HEADING))]


def defined(path: Path) -> set[str]:
    return set(re.findall(r"^\s*def (\w+)\(", path.read_text(encoding="utf8"), re.MULTILINE))


def fixtures(path: Path) -> set[str]:
    """The functions ``path`` decorates with ``pytest.fixture`` (called or not)."""
    def is_fixture(decorator) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return ast.unparse(target) == "pytest.fixture"
    return {node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf8")))
            if isinstance(node, ast.FunctionDef) and any(map(is_fixture, node.decorator_list))}


def test_every_test_the_ledger_names_exists():
    section = ledger()
    files = STILL_NAMED.findall(section)
    assert len(files) > 20, "the ledger's list of tests under their d59c23e names is gone"
    missing = [f"{file}: test_{name}" for file, names in files
               for name in (n.strip() for n in names.split(","))
               if f"test_{name}" not in defined(ROOT / "tests" / file)]
    test_files = list((ROOT / "tests").rglob("*.py"))
    tests_and_fixtures = {name for path in test_files for name in defined(path)
                          if name.startswith("test_")}
    tests_and_fixtures |= set().union(*map(fixtures, test_files))
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
    held_by = [name for row in rows[2:] for name in NAME.findall(row[1])]
    assert len(held_by) > 20, "the ledger's table of changed tests is gone"
    missing += [f"held now by `{name}`" for name in held_by
                if name not in tests_and_fixtures and f"test_{name}" not in tests_and_fixtures]
    assert not missing, "bench/README.md names tests or fixtures that do not exist:\n" + "\n".join(missing)
