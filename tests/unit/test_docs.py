"""The documentation is self-contained: every file it names is in this repository, and it points nowhere else."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a path with a folder, as docs write them: tests/unit/test_passes.py, ops/creation.py, examples/mlp.py
PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.(?:py|md|json|toml))(?![\w/-])")
# how docs name a file of runtime/ or transpiler/ without the package folder
ANCHORS = ["", "runtime", "transpiler", "runtime/ops", "runtime/nn"]


def named_paths(text):
    return sorted(set(PATH.findall(text)))


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_named_file_exists_in_the_repository(doc):
    missing = [p for p in named_paths(doc.read_text(encoding="utf-8"))
               if not any((ROOT / anchor / p).exists() for anchor in ANCHORS)]
    assert not missing, f"{doc.name} names files that are not in the repository: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_nothing_points_outside_the_repository(doc):
    text = doc.read_text(encoding="utf-8")
    outside = re.findall(r"\.\./[\w./-]+|(?<![\w.])/(?:work|tmp|home|Users)/[\w./-]*|https?://\S+", text)
    assert not outside, f"{doc.name} points outside the repository: {outside}"


def test_the_path_reader_finds_paths_and_only_paths():
    text = "see `tests/unit/test_passes.py`, ops/creation.py and x.py; not a/b or 2/3.5"
    assert named_paths(text) == ["ops/creation.py", "tests/unit/test_passes.py"]
