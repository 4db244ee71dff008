"""`infra.documents.read_text` with a root: a file outside it is named as outside, and a link as a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.documents import PIPELINE_FILE, DocumentError, read_text


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    repo, other = tmp_path / "repo", tmp_path / "other"
    repo.mkdir()
    other.mkdir()
    (other / "ci.yml").write_text("job: {script: [x]}\n")
    return repo, other / "ci.yml"


def test_a_file_outside_the_root_is_outside_not_a_symlink(tmp_path: Path) -> None:
    repo, outside = _tree(tmp_path)
    for given in (outside, repo / ".." / "other" / "ci.yml"):
        with pytest.raises(DocumentError) as caught:
            read_text(given, PIPELINE_FILE, root=repo, name="ci.yml")
        assert str(caught.value) == f"ci.yml: is outside the repository ({repo}): not read"


def test_a_link_inside_the_root_that_leads_out_is_said_to_be_one(tmp_path: Path) -> None:
    repo, outside = _tree(tmp_path)
    (repo / "ci.yml").symlink_to(outside)
    with pytest.raises(DocumentError) as caught:
        read_text(repo / "ci.yml", PIPELINE_FILE, root=repo, name="ci.yml")
    assert str(caught.value).startswith("ci.yml: leads outside the repository (a symlink to ")
