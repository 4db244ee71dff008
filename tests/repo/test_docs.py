"""The documentation stands on its own: its links resolve inside the repository, and nothing points outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support.paths import ROOT

DOCUMENTS = sorted([ROOT / "README.md", ROOT / "policy" / "README.md", *(ROOT / "docs").glob("*.md")])

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_SKIPPED_DIRS = {
    ".git",
    "venv",
    ".venv",
    ".ci-venv",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ci-tools",
    ".lock-venv",
}
_TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".json", ".cfg", ".sh", ""}


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if re.match(r"^#{1,6} ", line)}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(document: Path) -> None:
    broken = []
    for target in _LINK.findall(document.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        path = (document.parent / file_part).resolve() if file_part else document
        if not path.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no such heading")
    assert broken == []


def _project_files() -> list[Path]:
    """The files the repository holds or would (tracked or not ignored): build outputs such as `.engine/`'s
    hundreds of MB of binaries are not the project's text, and reading them took a loaded machine past a minute."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = (ROOT / name for name in listed.split("\0") if name)
    return [path for path in paths if path.is_file() and not _SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)]


def test_nothing_points_outside_the_repository() -> None:
    outside = ["../" + "shared", "shared/" + "research", "DESIGN" + ".md", "/" + "work/"]
    hits = []
    for path in _project_files():
        if path.suffix not in _TEXT_SUFFIXES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.relative_to(ROOT)}: {needle}" for needle in outside if needle in text]
    assert hits == []


def test_readme_reads_in_one_sitting() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


_REPO_PATH = re.compile(r"(?<![\w./-])((?:tests|infra|policy|docs|scripts|\.ci)/[\w./-]*\w)(?:::\w+)?")
_MADE_BY_COMMANDS = ("policy/venv", "policy/config")  # the pack's venv; stack configs the default branch may hold
_NOT_PATHS = ("infra/h100",)  # a branch name in a pipeline's variables


def test_paths_named_in_the_docs_and_docstrings_exist() -> None:
    """A file moved (tests into their layer's folder, a module split) leaves no prose pointing at its old place."""
    texts = [*DOCUMENTS, *ROOT.glob("infra/**/*.py"), *ROOT.glob("policy/**/*.py"), *ROOT.glob("tests/**/*.py")]
    missing = []
    for path in texts:
        if any(part in _SKIPPED_DIRS for part in path.relative_to(ROOT).parts):
            continue
        for named in _REPO_PATH.findall(path.read_text(encoding="utf-8")):
            if named.startswith(_MADE_BY_COMMANDS) or named in _NOT_PATHS or "*" in named:
                continue
            if not (ROOT / named).exists():
                missing.append(f"{path.relative_to(ROOT)}: {named}")
    assert missing == []
