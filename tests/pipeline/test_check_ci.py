"""`python -m infra check-ci`: the sample pipeline passes, each mistake is one line, exit codes are right."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import FIXTURES

from infra.__main__ import main
from infra.config.load import load_spec
from infra.model.platform import derive
from infra.pipeline.resolve import ResolveError
from infra.pipeline.rules import check_pipeline
from infra.render.ci_templates import render_ci_templates

SAMPLE = FIXTURES / "training-repo"
BROKEN = FIXTURES / "training-repo-broken"
TEMPLATES = ".gitlab/ci/gpu-ci-templates.yml"
SUPERVISED_JOBS = "(16 jobs: train-validate-tft, train-validate-mamba2, train-validate-tggn and 13 more)"
"""The jobs a fault in the supervised template breaks, as its line names them."""

BROKEN_LINES = [
    ".gitlab-ci.yml: include 'ci/extra-models.yml': no such file in the repository",
    ".gitlab-ci.yml: hyperopt-ppo: extends .train-validate-base, .train-validate, not .train-rl-base: ppo jobs run "
    "with profile rl on pool ci-compile",
    ".gitlab-ci.yml: train-validate-tft: extends .train-validate, not .train-validate-base: tft jobs run with "
    "profile supervised on pool ci-training",
    ".gitlab-ci.yml: train-validate-mamba2: KUBERNETES_MEMORY_LIMIT=64Gi is above the runner's "
    "memory_limit_overwrite_max_allowed=40Gi: the job would fail",
    ".gitlab-ci.yml: hyperopt-kan: KUBERNETES_NODE_SELECTOR_POOL=k8s.scaleway.com/pool-name=ci-training-evil is "
    r"refused by runner ci-training (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name=(ci-training)$)"
    ": the job would fail",
    # The RL runner admits its own pool only: a DQN job cannot be moved to the L40S.
    ".gitlab-ci.yml: hyperopt-dqn: KUBERNETES_NODE_SELECTOR_POOL=k8s.scaleway.com/pool-name=ci-training is "
    r"refused by runner ci-compile (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name=(ci-compile)$)"
    ": the job would fail",
    ".gitlab-ci.yml: train-validate-xlstm: extends .train-validate-bse, which is defined nowhere",
    ".gitlab-ci.yml: train-validate-liquid: KUBERNETES_CPU_REQUEST='2 cores': not a Kubernetes CPU quantity",
    ".gitlab-ci.yml: train-validate-liquid: memory request 16Gi is above its limit 12Gi: Kubernetes refuses the pod",
]


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A writable copy of the sample training repository."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "repo"))


def _include_templates_locally(repo: Path, text: str) -> None:
    """Commit a templates file to the branch and include it with `local:` (each branch has its copy)."""
    pipeline = repo / ".gitlab-ci.yml"
    document = yaml.safe_load(pipeline.read_text())
    document["include"] = [{"local": TEMPLATES}, {"local": "ci/supervised.yml"}]
    pipeline.write_text(yaml.safe_dump(document))
    (repo / TEMPLATES).parent.mkdir(parents=True)
    (repo / TEMPLATES).write_text(text)


def test_sample_pipeline_passes(dev_platform: dict[str, Any]) -> None:
    result = check_pipeline(SAMPLE / ".gitlab-ci.yml", load_spec(dev_platform))
    assert [str(v) for v in result.violations] == []
    assert result.warnings == []
    assert result.jobs_checked == 22  # the 20 training jobs, the image build and the report


def test_broken_pipeline_gives_one_line_per_violation(dev_platform: dict[str, Any]) -> None:
    result = check_pipeline(BROKEN / ".gitlab-ci.yml", load_spec(dev_platform))
    assert [str(v) for v in result.violations] == BROKEN_LINES


def test_a_template_asking_more_than_the_maximum_fails_once(sample_copy: Path, dev_platform: dict[str, Any]) -> None:
    """A stale or hand-edited templates file is checked as committed; its fault is reported where it is."""
    spec = load_spec(dev_platform)
    templates = yaml.safe_load(render_ci_templates(derive(spec)))
    templates[".train-validate-base"]["variables"]["KUBERNETES_MEMORY_LIMIT"] = "48Gi"
    _include_templates_locally(sample_copy, yaml.safe_dump(templates))
    result = check_pipeline(sample_copy / ".gitlab-ci.yml", spec)
    assert [str(v) for v in result.violations] == [
        f"{TEMPLATES}: .train-validate-base: KUBERNETES_MEMORY_LIMIT=48Gi is above the runner's "
        f"memory_limit_overwrite_max_allowed=40Gi: the job would fail {SUPERVISED_JOBS}"
    ]


def test_the_committed_templates_win_over_the_rendered_ones(sample_copy: Path, dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    _include_templates_locally(sample_copy, render_ci_templates(derive(spec)))
    assert check_pipeline(sample_copy / ".gitlab-ci.yml", spec).violations == []
    dev_platform["profiles"]["supervised"]["memory_limit"] = "32Gi"  # the platform shrank; the repo is behind
    lines = [str(v) for v in check_pipeline(sample_copy / ".gitlab-ci.yml", load_spec(dev_platform)).violations]
    assert lines == [
        f"{TEMPLATES}: .train-validate-base: KUBERNETES_MEMORY_LIMIT=40Gi is above the runner's "
        f"memory_limit_overwrite_max_allowed=32Gi: the job would fail {SUPERVISED_JOBS}"
    ]


def test_a_project_include_reads_the_templates_the_platform_commits(
    sample_copy: Path, dev_platform: dict[str, Any]
) -> None:
    """`include: project:` reads the default branch, which holds what `pulumi up` committed from the spec:
    a stale copy on the branch does not matter."""
    (sample_copy / TEMPLATES).parent.mkdir(parents=True)
    (sample_copy / TEMPLATES).write_text("stale: {script: [exit 1]}\n")
    result = check_pipeline(sample_copy / ".gitlab-ci.yml", load_spec(dev_platform))
    assert (result.violations, result.warnings, result.jobs_checked) == ([], [], 22)


def test_another_projects_include_cannot_be_resolved_offline(sample_copy: Path, dev_platform: dict[str, Any]) -> None:
    pipeline = sample_copy / ".gitlab-ci.yml"
    document = yaml.safe_load(pipeline.read_text())
    document["include"].append({"project": "ml-team/ci-snippets", "file": "lint.yml"})
    pipeline.write_text(yaml.safe_dump(document))
    with pytest.raises(ResolveError) as raised:
        check_pipeline(pipeline, load_spec(dev_platform))
    assert str(raised.value) == (
        ".gitlab-ci.yml: project include 'ml-team/ci-snippets' file 'lint.yml' cannot be read offline (try --online)"
    )


def test_a_local_include_of_the_templates_not_yet_committed_is_read_from_the_spec(
    sample_copy: Path, dev_platform: dict[str, Any]
) -> None:
    pipeline = sample_copy / ".gitlab-ci.yml"
    document = yaml.safe_load(pipeline.read_text())
    document["include"][0] = {"local": TEMPLATES}
    pipeline.write_text(yaml.safe_dump(document))
    result = check_pipeline(pipeline, load_spec(dev_platform))
    assert (result.violations, result.warnings, result.jobs_checked) == ([], [], 22)


def test_global_and_expanded_variables_are_seen(sample_copy: Path, dev_platform: dict[str, Any]) -> None:
    pipeline = sample_copy / ".gitlab-ci.yml"
    document = yaml.safe_load(pipeline.read_text())
    document["variables"]["POOL"] = "ci-training-evil"
    document["variables"]["KUBERNETES_NODE_SELECTOR_ZONE"] = "k8s.scaleway.com/pool-name=${POOL}"
    document["variables"]["KUBERNETES_HELPER_CPU_REQUEST"] = "2"
    document["hyperopt-dqn"]["variables"]["KUBERNETES_CPU_LIMIT"] = "$UNKNOWN_CPU"
    pipeline.write_text(yaml.safe_dump(document))
    result = check_pipeline(pipeline, load_spec(dev_platform))
    # A global variable reaches the jobs of both runners; each refuses it with its own allow-list.
    assert sorted(str(v) for v in result.violations) == [
        ".gitlab-ci.yml: variables: KUBERNETES_NODE_SELECTOR_ZONE=k8s.scaleway.com/pool-name=ci-training-evil is "
        rf"refused by runner {pool} (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name=({pool})$): "
        f"the job would fail ({jobs})"
        for pool, jobs in (
            ("ci-compile", "4 jobs: hyperopt-dqn, hyperopt-ppo, train-validate-dqn and 1 more"),
            ("ci-training", "16 jobs: train-validate-tft, train-validate-mamba2, train-validate-tggn and 13 more"),
        )
    ]
    assert sorted(result.warnings) == [
        ".gitlab-ci.yml: hyperopt-dqn: KUBERNETES_CPU_LIMIT is only known to GitLab: not checked",
        ".gitlab-ci.yml: variables: KUBERNETES_HELPER_CPU_REQUEST is ignored: the runner allows no such override",
    ]


def test_a_job_that_leaves_the_runner_is_reported(sample_copy: Path, dev_platform: dict[str, Any]) -> None:
    supervised = sample_copy / "ci" / "supervised.yml"
    document = yaml.safe_load(supervised.read_text())
    document["hyperopt-tlob"]["tags"] = ["docker"]
    supervised.write_text(yaml.safe_dump(document))
    lines = [str(v) for v in check_pipeline(sample_copy / ".gitlab-ci.yml", load_spec(dev_platform)).violations]
    assert lines == [
        "ci/supervised.yml: hyperopt-tlob: tags ['docker'] are not all held by its profile's runner ci-training "
        "['kapsule', 'ci-training']: no gpu-ci runner takes it"
    ]


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["check-ci", str(SAMPLE)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "22 jobs checked: no violation\n"

    assert main(["check-ci", str(BROKEN / ".gitlab-ci.yml")]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == BROKEN_LINES
    assert captured.err == f"{len(BROKEN_LINES)} violation(s) in 6 jobs\n"

    assert main(["check-ci", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: no pipeline file {tmp_path / '.gitlab-ci.yml'}\n"


def test_cli_checks_against_the_given_stack(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, dev_platform: dict[str, Any]
) -> None:
    dev_platform["profiles"]["rl"]["cpu_limit"] = "3500m"
    stack_file = tmp_path / "Pulumi.small.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-ci:platform": dev_platform}}))
    assert main(["check-ci", str(SAMPLE), "--config", str(stack_file)]) == 0  # templates follow the spec
    capsys.readouterr()
    dev_platform["profiles"]["rl"]["pool"] = "nope"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-ci:platform": dev_platform}}))
    assert main(["check-ci", str(SAMPLE), "--config", str(stack_file)]) == 2
    line = next(n for n, text in enumerate(stack_file.read_text().splitlines(), 1) if text.strip() == "pool: nope")
    assert capsys.readouterr().err.startswith(
        f"error: Pulumi.small.yaml:{line}: platform.profiles.rl.pool='nope': no such pool"
    )
