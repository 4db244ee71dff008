"""check-ci on hostile pipelines: every file within a budget, each over-budget input one `error:` line (exit 2)
naming the file and what was too much; nothing is read from outside the repository, nor echoed."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml
from support.plans import run_command

from infra.cli import check_ci
from infra.offline.stack_config import StackConfig
from infra.pipeline import includes, resolved
from infra.pipeline.globs import IncludePattern


@pytest.fixture(autouse=True)
def _stack_read_once(monkeypatch: pytest.MonkeyPatch, dev_stack: StackConfig) -> None:
    monkeypatch.setattr(check_ci, "load_stack_config", lambda *args, **kwargs: dev_stack)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def _refused(target: Path, *expected: str) -> str:
    """check-ci on `target`: exit 2, nothing on stdout, one `error:` line holding each of `expected`."""
    run = run_command("check-ci", str(target))
    assert (run.code, run.out) == (2, ""), run.err
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.err
    for part in expected:
        assert part in lines[0], lines[0]
    return lines[0]


JOB = "job: {script: [x]}\n"


def test_nesting_that_crashes_libyaml_is_refused_before_it_is_composed(tmp_path: Path) -> None:
    depth = 30_000  # libyaml's composer recurses in C: this many levels end the process
    _write(tmp_path, {".gitlab-ci.yml": JOB + "deep: " + "[" * depth + "]" * depth + "\n"})
    _refused(tmp_path, ".gitlab-ci.yml: nested more than 64 levels deep, not a CI config (line 2)")


def test_an_alias_bomb_is_refused_by_the_values_it_expands_to(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    _write(tmp_path, {".gitlab-ci.yml": JOB + "\n".join(lines) + "\n"})
    _refused(tmp_path, ".gitlab-ci.yml: expands to more than 100000 values (each alias counted where it is used)")


def test_a_file_over_a_mebibyte_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, {".gitlab-ci.yml": JOB + "# " + "x" * (1 << 20) + "\n"})
    _refused(tmp_path, ".gitlab-ci.yml: larger than 1024 KiB, not a pipeline file")


def _fan_out(jobs: int) -> str:
    """Ten levels of three templates, each extending the three of the level below: followed naively, the
    500-value template is merged 3^10 times (once a MemoryError); built once per template, 90 merges."""
    document: dict[str, object] = {".t0-0": {"script": ["x"], "variables": {f"V{i}": "v" for i in range(500)}}}
    document |= {f".t0-{j}": {"extends": ".t0-0"} for j in (1, 2)}
    for level in range(1, 10):
        document |= {f".t{level}-{j}": {"extends": [f".t{level - 1}-{k}" for k in range(3)]} for j in range(3)}
    document |= {f"job{i}": {"extends": ".t9-0"} for i in range(jobs)}
    return yaml.safe_dump(document)


def test_an_exponential_extends_dag_costs_each_template_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolved, "MAX_RESOLVE_WORK", 200_000)
    (tmp_path / ".gitlab-ci.yml").write_text(_fan_out(jobs=8))
    run = run_command("check-ci", str(tmp_path))
    assert (run.code, run.err) == (0, "8 jobs checked: no violation\n")


def test_a_fan_out_past_the_work_budget_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolved, "MAX_RESOLVE_WORK", 200_000)
    (tmp_path / ".gitlab-ci.yml").write_text(_fan_out(jobs=100))
    _refused(
        tmp_path,
        ".gitlab-ci.yml: job",
        ": takes more than 200,000 merged values to resolve (an `extends`, `!reference` or `parallel: matrix` "
        "fan-out): not resolved",
    )


def test_a_pathological_wildcard_include_is_matched_in_one_pass(tmp_path: Path) -> None:
    """GitLab matches `**a**a…` with RE2; a backtracking matcher takes exponential time on a path of `a`s."""
    pattern = "**a" * 40 + "**b.yml"
    assert not IncludePattern(pattern).matches("a" * 39 + "/" + "a" * 200 + ".yml")
    assert IncludePattern(pattern).matches("a" * 40 + "/b.yml")
    _write(tmp_path, {".gitlab-ci.yml": f"include: '{pattern}'\n" + JOB, "a" * 30 + "/x.yml": JOB})
    run = run_command("check-ci", str(tmp_path))
    assert run.code == 1 and run.out.startswith(".gitlab-ci.yml: include '**a**a**a")
    assert run.out.endswith("…: no such file in the repository\n")  # the pattern quoted by its start


def test_wildcards_walk_a_bounded_part_of_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(includes, "MAX_WALKED_ENTRIES", 20)
    files = {f"data/{i}.csv": "" for i in range(30)} | {"ci/a.yml": JOB}
    _write(tmp_path, {".gitlab-ci.yml": "include: 'ci/*.yml'\n", **files})
    assert run_command("check-ci", str(tmp_path)).code == 0  # only ci/ is walked
    (tmp_path / ".gitlab-ci.yml").write_text("include: '**.yml'\n" + JOB)
    _refused(tmp_path, ".gitlab-ci.yml: wildcard includes walk more than 20 files and folders of the repository")


def test_more_includes_than_gitlab_allows_are_refused(tmp_path: Path) -> None:
    files = {f"ci/{i:03}.yml": f"job{i}: {{script: [x]}}\n" for i in range(151)}
    _write(tmp_path, {".gitlab-ci.yml": "include: 'ci/*.yml'\n", **files})
    _refused(tmp_path, "ci/150.yml: more than 150 included files in all (GitLab's limit)")


def test_the_pipeline_and_its_includes_share_one_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(includes, "MAX_PIPELINE_VALUES", 2000)
    block = "variables: {" + ", ".join(f"V{i}: v" for i in range(200)) + "}"
    files = {f"ci/{i}.yml": f"job{i}: {{script: [x]}}\n.t{i}: {{{block}}}" for i in range(3)}
    _write(tmp_path, {".gitlab-ci.yml": "include: 'ci/*.yml'\n", **files})
    assert run_command("check-ci", str(tmp_path)).code == 0
    files = {f"ci/{i}.yml": f"job{i}: {{script: [x]}}\n.t{i}: {{{block}}}" for i in range(3, 6)}
    _write(tmp_path, files)
    _refused(tmp_path, "ci/4.yml: the pipeline and its includes expand to more than 2,000 values")


def test_the_work_budget_counts_what_resolving_merges() -> None:
    work = resolved.Work(limit=10)
    resolved.deep_merge({"a": 1}, {"b": {"c": 2}}, work)
    assert work.spent == 2
    with pytest.raises(resolved.ResolveError, match="more than 10 merged values"):
        resolved.deep_merge({str(i): i for i in range(5)}, {str(i): i for i in range(5)}, work)


@pytest.mark.skipif(
    not os.path.lexists("/proc/1/cwd"),
    reason="the file no stat() may read is a link to /proc/1/cwd, and this system has no /proc: the suite runs it on "
    "Linux (the build machines, .ci/run and CI's test job)",
)
@pytest.mark.parametrize("where", ["include", "pipeline", "folder"])
def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path, where: str) -> None:
    """A symlink to /proc/1/cwd: stat() is refused even to root (once a PermissionError traceback)."""
    if where == "pipeline":
        (tmp_path / ".gitlab-ci.yml").symlink_to("/proc/1/cwd")
        _refused(tmp_path, ".gitlab-ci.yml: cannot be ")
    elif where == "include":
        _write(tmp_path, {".gitlab-ci.yml": "include: ci/link.yml\n" + JOB})
        (tmp_path / "ci").mkdir()
        (tmp_path / "ci" / "link.yml").symlink_to("/proc/1/cwd")
        _refused(tmp_path, "ci/link.yml: ")
    else:
        (tmp_path / "link").symlink_to("/proc/1/cwd")
        _refused(tmp_path / "link", "link: cannot be ")


def test_a_symlink_out_of_the_repository_is_refused_and_not_echoed(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.yml"
    secret.parent.mkdir()
    secret.write_text("SECRET-CONTENT: {script: [x]}\nalso: [not, valid\n")
    repo = _write(tmp_path / "repo", {".gitlab-ci.yml": "include: ci/secret.yml\n" + JOB})
    (repo / "ci").mkdir()
    (repo / "ci" / "secret.yml").symlink_to(secret)
    line = _refused(repo, "ci/secret.yml: leads outside the repository (a symlink to ", "): not read")
    assert "SECRET" not in line
    (repo / ".gitlab-ci.yml").unlink()
    (repo / ".gitlab-ci.yml").symlink_to(secret)
    assert "SECRET" not in _refused(repo, ".gitlab-ci.yml: leads outside the repository")


def test_a_symlink_inside_the_repository_is_read(tmp_path: Path) -> None:
    repo = _write(tmp_path, {".gitlab-ci.yml": "include: ci/link.yml\n", "shared/jobs.yml": JOB})
    (repo / "ci").mkdir()
    (repo / "ci" / "link.yml").symlink_to(repo / "shared" / "jobs.yml")
    run = run_command("check-ci", str(repo))
    assert (run.code, run.err) == (0, "1 jobs checked: no violation\n")


def test_a_wildcard_does_not_enter_a_symlinked_folder(tmp_path: Path) -> None:
    """git holds a symlinked folder as a file: GitLab finds nothing under it, and neither does check-ci (not even
    the names of what lies outside)."""
    outside = _write(tmp_path / "outside", {"OUTSIDE-NAME.yml": JOB})
    repo = _write(tmp_path / "repo", {".gitlab-ci.yml": "include: 'ci/*.yml'\n" + JOB})
    (repo / "ci").symlink_to(outside, target_is_directory=True)
    run = run_command("check-ci", str(repo))
    assert (run.code, run.out) == (1, ".gitlab-ci.yml: include 'ci/*.yml': no such file in the repository\n")


@pytest.mark.parametrize("where", ["workflow", "job"])
def test_thousands_of_rules_that_set_variables_are_over_budget_not_compared_pairwise(
    tmp_path: Path, where: str
) -> None:
    rules = "".join(f"    - {{if: $R{i}, variables: {{N: '{i}'}}}}\n" for i in range(12_000))
    head = "workflow:\n  rules:\n" if where == "workflow" else "job:\n  script: [x]\n  rules:\n"
    _write(tmp_path, {".gitlab-ci.yml": head + rules + (JOB if where == "workflow" else "")})
    _refused(tmp_path, ".gitlab-ci.yml: ", "rules: more than 64 rules that set other variables: not checked")
