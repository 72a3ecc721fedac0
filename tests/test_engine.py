"""The engine's own bookkeeping, without a build: fast."""

import ast
import importlib.metadata
import re
from pathlib import Path

import pytest

from autograd_docs import _compat
from autograd_docs.diagnostics import AuthorError

ROOT = Path(__file__).resolve().parent.parent
EMITTERS = [*(ROOT / "autograd_docs").rglob("*.py"), ROOT / "tests" / "site_copy.py"]


@pytest.mark.parametrize("distribution", sorted(_compat.WRITTEN_AGAINST))
def test_the_private_hooks_were_written_against_the_installed_version(distribution):
    """After a pin bump, read the hooks in autograd_docs/_compat/ again, then update WRITTEN_AGAINST."""
    assert importlib.metadata.version(distribution) == _compat.WRITTEN_AGAINST[distribution]


def test_every_author_error_is_emitted_somewhere():
    source = "\n".join(path.read_text(encoding="utf8") for path in EMITTERS)
    used = set(re.findall(r"AuthorError\.([A-Z_]+)", source))
    assert {error.name for error in AuthorError} <= used


def test_every_message_says_what_to_do():
    for error in AuthorError:
        fields = dict.fromkeys(re.findall(r"(?<!\{)\{(\w+)", error.says + error.fix), "x")
        said = error.text(**fields)
        assert said.count(": ") >= 1 and error.fix.split()[0] in said, said


@pytest.mark.parametrize("role, name, says", [
    ("func", "torch.autograd.grad", None),
    ("func", "torch.autograd.gradcheck", None),  # the function, not its module
    ("meth", "torch.Tensor.backward", None),
    ("class", "torch.autograd.Function", None),
    ("func", "torch.autograd.gard", "torch.autograd has no attribute 'gard'"),
    ("class", "torch.cumsum", "it is a function, not a class"),
    ("func", "torch.Tensor.backward", "it is a method, not a function"),
])
def test_an_api_role_must_name_what_the_installed_torch_has(role, name, says):
    from autograd_docs import api_roles

    assert api_roles.problem(role, name) == says


def test_the_engines_settings_are_read_once_and_a_missing_snippets_folder_is_named(
        tmp_path, monkeypatch):
    from types import SimpleNamespace

    from sphinx.errors import ConfigError

    from autograd_docs import settings

    monkeypatch.delenv(settings.IDLE_SWITCH, raising=False)
    app = SimpleNamespace(confdir=str(tmp_path))
    configured = {settings.SNIPPETS: "snippets", settings.IDLE: 30}
    with pytest.raises(ConfigError, match=r"autograd_docs_snippets_dir = 'snippets' is no folder"):
        settings._read(app, configured)
    (tmp_path / "snippets").mkdir()
    settings._read(app, configured)
    assert settings.of(app) == settings.Settings(tmp_path / "snippets", 30.0)
    monkeypatch.setenv(settings.IDLE_SWITCH, "0")  # the environment wins, for one build
    settings._read(app, configured)
    assert settings.of(app).server_idle == 0.0


def test_the_engine_keeps_what_passes_between_events_in_build_state_not_module_globals():
    """A module-level dict, list, set or None that handlers fill (the path-keyed
    globals issue 41 moved) is state another build in the process would see:
    it belongs in build_state.BuildState, made afresh per build."""
    found = []
    for path in sorted((ROOT / "autograd_docs").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf8"))
        where = path.relative_to(ROOT)
        found += [f"{where}:{node.lineno} global" for node in ast.walk(tree)
                  if isinstance(node, ast.Global)]
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp) or (
                isinstance(value, ast.Constant) and value.value is None)
            if isinstance(target, ast.Name) and not target.id.isupper() and mutable \
                    and not target.id.startswith("__"):
                found.append(f"{where}:{node.lineno} {target.id}")
    assert not found
