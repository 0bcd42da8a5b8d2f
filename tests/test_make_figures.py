"""docs/make_figures.py's comparison of number files: tolerance for floats,
exact integers and strings, nulls and the "machine" part skipped, and a
message that names the path and both values.  (The check itself, which
regenerates the pictures' numbers, is a CI step, not a test.)"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "docs" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floats_within_the_tolerance_match(make_figures):
    compare = make_figures.compare
    assert compare({"x": 1.0}, {"x": 1.0 + 1e-9}) == []
    assert compare({"x": [0.0, -2.5]}, {"x": [0.0, -2.5 * (1 + 5e-7)]}) == []
    assert compare({"x": float("nan")}, {"x": float("nan")}) == []
    assert compare({"x": 2}, {"x": 2.0}) == []
    (line,) = compare({"x": 1.0}, {"x": 1.0 + 1e-5})
    assert line.startswith("x: committed 1.0, now 1.00001") and "> 1e-06" in line
    assert compare({"x": 1.0}, {"x": 1.0 + 1e-5}, rtol=1e-4) == []
    assert compare({"x": 0.0}, {"x": 1e-300}) != []
    assert compare({"x": 1.0}, {"x": float("nan")}) != []


def test_integers_strings_and_booleans_are_exact(make_figures):
    compare = make_figures.compare
    assert compare({"n": 56}, {"n": 57}) == ["n: committed 56, now 57"]
    assert compare({"s": "cpu"}, {"s": "gpu"}) == ['s: committed "cpu", now "gpu"']
    assert compare({"b": True}, {"b": 1}) == ["b: committed true, now 1"]
    assert compare({"b": True}, {"b": 1.0}) == ["b: committed true, now 1.0"]


def test_paths_missing_keys_and_lengths(make_figures):
    compare = make_figures.compare
    committed = {"results": {"rows": [{"domains": 3, "f": 0.5}, {"domains": 2, "f": 0.7}]}}
    fresh = {"results": {"rows": [{"domains": 3, "f": 0.5}, {"domains": 1, "f": 0.7}]}}
    assert compare(committed, fresh) == ["results.rows[1].domains: committed 2, now 1"]
    assert compare({"a": 1, "b": 2}, {"a": 1, "c": 3}) == ["b: committed 2, now missing",
                                                           "c: not committed, now 3"]
    assert compare({"r": [1, 2]}, {"r": [1, 2, 3]}) == ["r: committed 2 entries, now 3"]
    long = {"r": list(range(100))}
    (line,) = compare({"r": 0}, long)
    assert line.endswith("...") and len(line) < 100


def test_machine_part_and_nulls_are_not_compared(make_figures):
    compare = make_figures.compare
    assert compare({"machine": {"s": 1.0}, "n": 1}, {"machine": {"s": 9.0}, "n": 1}) == []
    # only the top level's "machine" is skipped
    assert compare({"r": {"machine": 1}}, {"r": {"machine": 2}}) == [
        "r.machine: committed 1, now 2"]
    passes = {"A (CPU)": {"256": None, "512": None}, "D (CPU)": {"256": 3}}
    assert compare({"passes": passes}, {"passes": {"A (CPU)": {"256": 130, "512": None},
                                                   "D (CPU)": {"256": 3}}}) == []


def test_every_figure_has_its_generator(make_figures):
    for numbers, picture, command in make_figures.FIGURES:
        assert (ROOT / command[0]).is_file(), command
        assert numbers.endswith(".json") and picture.endswith(".png")
