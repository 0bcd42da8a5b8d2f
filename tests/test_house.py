"""Rules of the house that a reader of the code relies on, checked on the
source: no module global is assigned at run time, and tests change tuning
constants only through ``meshccl._tuning.override`` (never by assigning
to a module of the package)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sources(folder):
    return sorted((ROOT / folder).rglob("*.py"))


def test_no_global_statements():
    """A function that assigns a module global (``global x``) hides state;
    caches go in functools.lru_cache, per-thread state in threading.local,
    settings in meshccl._tuning."""
    found = []
    for path in _sources("meshccl"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Global):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} global {node.names}")
    assert not found, found


def _package_names(tree):
    """Names a test module binds to modules of meshccl."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.startswith("meshccl")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("meshccl"):
            names |= {a.asname or a.name for a in node.names}
    return names


def test_tests_do_not_patch_constants():
    """Tests set meshccl's settings with _tuning.override, not by patching an
    UPPER_CASE name of one of its modules."""
    found = []
    for path in _sources("tests"):
        tree = ast.parse(path.read_text())
        package = _package_names(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "setattr" and len(node.args) >= 2
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in package
                    and isinstance(node.args[1], ast.Constant)
                    and re.fullmatch(r"[A-Z][A-Z0-9_]*", str(node.args[1].value))):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, found
