"""infra.pipeline.resolve: a pipeline read as GitLab reads it (includes, extends, !reference, default:,
inherit:, stages), and check-ci's answer on the constructs real training pipelines use."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import FIXTURES

from infra.__main__ import main
from infra.config.load import load_spec
from infra.model.platform import derive, load_platform
from infra.pipeline.resolve import ResolveError, resolve_file
from infra.pipeline.rules import check_pipeline, platform_templates
from infra.render.ci_templates import render_ci_templates

SAMPLE = FIXTURES / "training-repo"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root / ".gitlab-ci.yml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A writable copy of the sample training repository."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "repo"))


def _edit(repo: Path, name: str, change: str) -> None:
    """Append YAML to a file of the repository (later keys of the same job replace earlier ones)."""
    path = repo / name
    path.write_text(path.read_text() + textwrap.dedent(change))


def _lines(repo: Path, spec: Any) -> list[str]:
    return [str(v) for v in check_pipeline(repo / ".gitlab-ci.yml", spec).violations]


# --- GitLab's merge rules ------------------------------------------------------------------------------


def test_extends_several_parents_deep_merge_later_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            .a: {variables: {A: a, SHARED: a}, script: [a], tags: [x], artifacts: {paths: [a], when: always}}
            .b: {variables: {B: b, SHARED: b}, script: [b], artifacts: {paths: [b]}}
            .c: {extends: .b, variables: {C: c}}
            job: {extends: [.a, .c], variables: {SHARED: job}}
            """
        },
    )
    job = resolve_file(path).jobs["job"]
    assert job.keys["variables"] == {"A": "a", "SHARED": "job", "B": "b", "C": "c"}
    assert job.keys["script"] == ["b"]  # arrays are replaced, the later parent wins
    assert job.keys["artifacts"] == {"paths": ["b"], "when": "always"}  # hashes merge
    assert job.templates == (".a", ".c", ".b")
    assert job.variable_origin["B"] == (".gitlab-ci.yml", ".b")


def test_extends_stops_at_eleven_levels(tmp_path: Path) -> None:
    chain = {f".t{i}": {"extends": f".t{i + 1}"} for i in range(12)} | {".t12": {"script": ["x"]}}
    for depth, expect_ok in ((10, True), (11, False)):  # job -> .t2 ... -> .t12: 11 levels; from .t1: 12
        document = {**chain, "job": {"extends": f".t{12 - depth}"}}
        path = tmp_path / f"{depth}.yml"
        path.write_text(yaml.safe_dump(document))
        job = resolve_file(path).jobs["job"]
        assert job.complete is expect_ok, depth
        assert any("deeper than 11" in p.message for p in job.problems) is not expect_ok


def test_includes_merge_in_order_and_the_including_file_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            include: ["ci/*.yml", {local: deep/**.yml}]
            variables: {WHO: main}
            job: {script: [main]}
            """,
            "ci/a.yml": "variables: {WHO: a, A: a}\njob: {script: [a], stage: build}\n",
            "ci/b.yml": "variables: {WHO: b, B: b}\njob: {tags: [b]}\n",
            "ci/sub/skipped.yml": "variables: {SKIPPED: 'yes'}\n",
            "deep/x/y.yml": "variables: {DEEP: 'yes'}\n",
        },
    )
    pipeline = resolve_file(path)
    assert pipeline.variables == {"WHO": "main", "A": "a", "B": "b", "DEEP": "yes"}  # `*` stays in its folder
    assert pipeline.jobs["job"].keys == {"script": ["main"], "stage": "build", "tags": ["b"]}
    assert pipeline.jobs["job"].variable_origin["A"] == ("ci/a.yml", "variables")


def test_references_anywhere_nested_and_flattened_in_scripts(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            .setup: {script: [pip install ., !reference [.more, script]]}
            .more: {script: [make]}
            .rules: {rules: [{if: $A}, {when: manual}]}
            whole: !reference [.more]
            job:
              script: [!reference [.setup, script], train]
              rules: [!reference [.rules, rules], {when: never}]
            """
        },
    )
    jobs = resolve_file(path).jobs
    assert jobs["whole"].keys == {"script": ["make"]}
    job = jobs["job"]
    assert job.keys["script"] == ["pip install .", "make", "train"]
    assert job.keys["rules"] == [{"if": "$A"}, {"when": "manual"}, {"when": "never"}]


def test_references_are_resolved_after_extends(tmp_path: Path) -> None:
    """GitLab extends first: a reference to a job's key sees what that job inherits."""
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            .base: {variables: {X: base}}
            .child: {extends: .base}
            job: {script: [x], variables: {Y: !reference [.child, variables, X]}}
            """
        },
    )
    assert resolve_file(path).jobs["job"].variables == {"Y": "base"}


def test_an_own_block_replaces_an_inherited_reference(tmp_path: Path) -> None:
    """GitLab merges `extends` while `!reference`s are still tags (not hashes): the job's own `variables`
    replace the template's referenced block instead of merging with it."""
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            .sizes: {variables: {KUBERNETES_MEMORY_LIMIT: 16Gi}}
            .with-block: {script: [x], variables: !reference [.sizes, variables]}
            kept: {extends: .with-block}
            replaced: {extends: .with-block, variables: {OWN: own}}
            """
        },
    )
    jobs = resolve_file(path).jobs
    assert jobs["kept"].variables == {"KUBERNETES_MEMORY_LIMIT": "16Gi"}
    assert jobs["kept"].variable_origin == {"KUBERNETES_MEMORY_LIMIT": (".gitlab-ci.yml", ".sizes")}
    assert jobs["replaced"].variables == {"OWN": "own"}


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("job: {script: !reference [.nope, script]}", "!reference [.nope, script] could not be found"),
        (
            ".a: {script: !reference [.b, script]}\n.b: {script: !reference [.a, script]}\njob: {script: [x]}",
            "circular",
        ),
        ("job: {script: !reference nope}", "!reference must be a list like [job, key]"),
        ("include: https://example.com/ci.yml", "remote include 'https://example.com/ci.yml' cannot be read offline"),
        ("include: {template: Jobs/SAST.gitlab-ci.yml}", "template include"),
        ("include: {component: gitlab.com/x/y@1}", "component include"),
        ("job: [unclosed", "not valid YAML"),
        ("- just\n- a list", "the top level must be a mapping"),
        ("job: !unknown {script: [x]}", "not valid YAML"),
    ],
)
def test_what_cannot_be_resolved_is_one_error_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pipeline: str, message: str
) -> None:
    path = _write(tmp_path, {".gitlab-ci.yml": pipeline + "\n"})
    with pytest.raises(ResolveError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        resolve_file(path)
    assert main(["check-ci", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("error: .gitlab-ci.yml: ")


def test_nested_references_stop_at_ten_levels(tmp_path: Path) -> None:
    def pipeline(levels: int) -> dict[str, Any]:
        document: dict[str, Any] = {".r0": {"script": ["x"]}}
        for i in range(1, levels + 1):
            document[f".r{i}"] = {"script": f"!reference [.r{i - 1}, script]"}
        return {**document, "job": {"script": f"!reference [.r{levels}, script]"}}

    for levels, ok in ((9, True), (10, False)):
        path = tmp_path / f"{levels}.yml"
        path.write_text(yaml.safe_dump(pipeline(levels)).replace("'!reference", "!reference").replace("]'", "]"))
        if ok:
            assert resolve_file(path).jobs["job"].keys["script"] == ["x"]
        else:
            with pytest.raises(ResolveError, match="deeper than 10"):
                resolve_file(path)


# --- the seven cases ------------------------------------------------------------------------------------


def test_1_a_whole_variables_block_by_reference(repo: Path, dev_platform: dict[str, Any]) -> None:
    """Once a traceback and exit 1; now the template's variables, reported where the template writes them."""
    _edit(
        repo,
        "ci/supervised.yml",
        """
        train-validate-tft:
          extends: .train-validate
          stage: train
          tags: !reference [.train-validate-base, tags]
          variables: !reference [.train-validate-base, variables]
        """,
    )
    spec = load_spec(dev_platform)
    job = resolve_file(repo / ".gitlab-ci.yml", platform=platform_templates(derive(spec))).jobs["train-validate-tft"]
    template = yaml.safe_load(render_ci_templates(derive(spec)))[".train-validate-base"]
    assert {k: job.variables[k] for k in template["variables"]} == template["variables"]
    assert job.variable_origin["KUBERNETES_MEMORY_LIMIT"] == (spec.ci.templates_path, ".train-validate-base")
    assert job.templates == (".train-validate", ".train-validate-base")
    assert _lines(repo, spec) == []
    assert main(["check-ci", str(repo)]) == 0


def test_1_a_family_job_taking_another_profiles_block_is_caught(repo: Path, dev_platform: dict[str, Any]) -> None:
    _edit(
        repo,
        ".gitlab-ci.yml",
        """
        train-validate-dqn:
          extends: .train-validate
          stage: train
          tags: !reference [.train-validate-base, tags]
          variables: !reference [.train-validate-base, variables]
        """,
    )
    assert _lines(repo, load_spec(dev_platform)) == [
        ".gitlab-ci.yml: train-validate-dqn: extends .train-validate, .train-validate-base, not .train-rl-base: "
        "dqn jobs run with profile rl on pool ci-compile"
    ]


@pytest.mark.parametrize(
    ("stages", "available"),
    [("stages: [build, report]", ".pre, build, report, .post"), ("", ".pre, build, test, deploy, .post")],
)
def test_2_a_stage_the_pipeline_lacks_is_refused(
    repo: Path, dev_platform: dict[str, Any], stages: str, available: str
) -> None:
    pipeline = repo / ".gitlab-ci.yml"
    pipeline.write_text(pipeline.read_text().replace("stages: [build, train, report]", stages))
    lines = _lines(repo, load_spec(dev_platform))
    expected = f"chosen stage train does not exist; available stages are {available}"
    assert "ci/supervised.yml: train-validate-tft: " + expected in lines
    assert ".gitlab-ci.yml: hyperopt-dqn: " + expected in lines
    assert len([line for line in lines if expected in line]) == 20
    report = [line for line in lines if line.startswith(".gitlab-ci.yml: report:")]
    missing = f".gitlab-ci.yml: report: chosen stage report does not exist; available stages are {available}"
    assert report == ([] if stages else [missing])


def test_2_edge_stages_always_exist(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {".gitlab-ci.yml": "stages: [x]\nfirst: {stage: .pre, script: [a]}\nlast: {stage: .post, script: [b]}\n"},
    )
    pipeline = resolve_file(path)
    assert pipeline.stages == (".pre", "x", ".post")
    assert [p for job in pipeline.jobs.values() for p in job.problems] == []


def test_3_tags_by_reference_are_the_templates_tags(repo: Path, dev_platform: dict[str, Any]) -> None:
    _edit(
        repo,
        ".gitlab-ci.yml",
        """
        build-image:
          stage: build
          script: [build]
          tags: !reference [.train-rl-base, tags]
          variables: {KUBERNETES_MEMORY_LIMIT: 64Gi}
        """,
    )
    spec = load_spec(dev_platform)
    job = resolve_file(repo / ".gitlab-ci.yml", platform=platform_templates(derive(spec))).jobs["build-image"]
    assert job.tags == tuple(spec.runner.tags)
    assert _lines(repo, spec) == [  # now on the RL pool's runner, so its maxima apply
        ".gitlab-ci.yml: build-image: KUBERNETES_MEMORY_LIMIT=64Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail"
    ]


def test_4_a_single_variable_by_reference_is_resolved_and_checked(repo: Path, dev_platform: dict[str, Any]) -> None:
    _edit(
        repo,
        ".gitlab-ci.yml",
        """
        .big: {variables: {KUBERNETES_MEMORY_LIMIT: 64Gi, POOL: k8s.scaleway.com/pool-name=ci-training-evil}}
        hyperopt-ppo:
          extends: [.train-rl-base, .hyperopt]
          variables:
            MODEL: ppo
            KUBERNETES_MEMORY_LIMIT: !reference [.big, variables, KUBERNETES_MEMORY_LIMIT]
            KUBERNETES_NODE_SELECTOR_POOL: !reference [.big, variables, POOL]
        """,
    )
    spec = load_spec(dev_platform)
    result = check_pipeline(repo / ".gitlab-ci.yml", spec)
    assert result.warnings == []
    assert [str(v) for v in result.violations] == [
        ".gitlab-ci.yml: .big: KUBERNETES_MEMORY_LIMIT=64Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail (job hyperopt-ppo)",
        ".gitlab-ci.yml: hyperopt-ppo: KUBERNETES_NODE_SELECTOR_POOL=k8s.scaleway.com/pool-name=ci-training-evil is "
        r"refused by runner ci-compile (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name="
        "(ci-compile)$): the job would fail",
    ]


def test_5_inherit_default_false_or_a_list(tmp_path: Path, dev_platform: dict[str, Any]) -> None:
    path = _write(
        tmp_path,
        {
            ".gitlab-ci.yml": """
            stages: [train]
            image: legacy:1
            variables: {G: g, H: h}
            default: {tags: [kapsule, gpu], image: python:3.12, before_script: [setup]}
            all: {stage: train, script: [x]}
            none: {stage: train, script: [x], inherit: {default: false, variables: false}}
            some: {stage: train, script: [x], inherit: {default: [image], variables: [H]}}
            train-validate-dqn: {stage: train, script: [x], inherit: {default: false}}
            """
        },
    )
    jobs = resolve_file(path).jobs
    assert jobs["all"].keys["image"] == "python:3.12" and jobs["all"].tags == ("kapsule", "gpu")
    assert jobs["all"].variables == {"G": "g", "H": "h"}
    assert "image" not in jobs["none"].keys and jobs["none"].tags == () and jobs["none"].variables == {}
    assert jobs["some"].keys["image"] == "python:3.12" and jobs["some"].tags == ()
    assert jobs["some"].variables == {"H": "h"}
    lines = [str(v) for v in check_pipeline(path, load_spec(dev_platform)).violations]
    assert lines == [
        # `default: image` reaches the job: the runner admits the platform registry's images and alpine only
        ".gitlab-ci.yml: all: image python:3.12 is not in runner ci-compile's allowed_images [rg.fr-par.scw.cloud/"
        "gpu-ci/*, rg.fr-par.scw.cloud/gpu-ci/**/*, alpine:3.22]: the runner refuses it, the job fails",
        ".gitlab-ci.yml: train-validate-dqn: extends no template, not .train-rl-base: dqn jobs run with "
        "profile rl on pool ci-compile",
    ]


@pytest.mark.parametrize(
    ("templates_branch", "ref", "warned"),
    [(None, "main", False), (None, "v1.2", True), ("gpu-ci", "main", True), ("gpu-ci", "gpu-ci", False)],
)
def test_6_a_project_include_pinned_elsewhere_may_be_stale(
    repo: Path, dev_platform: dict[str, Any], templates_branch: str | None, ref: str, warned: bool
) -> None:
    if templates_branch:
        dev_platform["ci"]["templates_branch"] = templates_branch
    pipeline = repo / ".gitlab-ci.yml"
    pipeline.write_text(pipeline.read_text().replace("    ref: main\n", f"    ref: {ref}\n"))
    result = check_pipeline(pipeline, load_spec(dev_platform))
    assert result.violations == []
    branch = templates_branch or "main"
    assert result.warnings == (
        [
            f".gitlab-ci.yml: include of ml-team/training:.gitlab/ci/gpu-ci-templates.yml pins ref '{ref}', but the "
            f"platform commits its templates to '{branch}': checked against the current templates, which that ref "
            "may not hold"
        ]
        if warned
        else []
    )


def test_6_the_default_branch_comes_from_the_ci_job(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_DEFAULT_BRANCH", "trunk")
    assert main(["check-ci", str(repo)]) == 0
    assert "pins ref 'main', but the platform commits its templates to 'trunk'" in capsys.readouterr().err
    assert main(["check-ci", str(repo), "--default-branch", "main"]) == 0
    assert "pins ref" not in capsys.readouterr().err


def test_7_the_templates_header_says_which_jobs_reach_the_default_pool(dev_platform: dict[str, Any]) -> None:
    header = [line for line in render_ci_templates(load_platform(dev_platform)).splitlines() if line.startswith("#")]
    text = " ".join(line.lstrip("# ") for line in header)
    assert "Jobs that extend none run on the runner's default pool" not in text
    assert (
        "A job that extends none runs on the default pool, ci-compile, only if that pool's runner holds all of its "
        "tags [kapsule, gpu, ci-compile] and no other runner does; otherwise another pool's runner takes it, or "
        "none does." in text
    )
