"""check-ci never ends in a traceback: random YAML documents and mutated copies of the fixture pipelines
give exit 0, 1 or 2, and generated hostile pipelines a plausible answer or short lines (the CLI's `main()`
in-process, hypothesis)."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import FIXTURES
from support.plans import run_command

from infra.cli import check_ci
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackConfig, load_stack_config
from infra.pipeline.resolve import Reference, read_yaml, resolve_text
from infra.pipeline.rules import check_resolved

NAMES = [
    ".train-rl-base",
    ".train-validate-base",
    ".train-validate",
    "train-validate-dqn",
    "hyperopt-tft",
    "build-image",
    "variables",
    "script",
    "tags",
    "KUBERNETES_MEMORY_LIMIT",
    "KUBERNETES_NODE_SELECTOR_POOL",
]
KEYS = [
    *NAMES,
    "extends",
    "stage",
    "stages",
    "default",
    "include",
    "inherit",
    "local",
    "project",
    "file",
    "ref",
    "rules",
    "image",
    "needs",
]


class _Dumper(yaml.SafeDumper):
    """Writes `Reference` back as GitLab's `!reference` tag."""


_Dumper.add_representer(Reference, lambda dumper, ref: dumper.represent_sequence("!reference", list(ref)))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 100),
    st.sampled_from([*NAMES, "train", "build", "64Gi", "2 cores", "k8s.scaleway.com/pool-name=ci-training", "$X"]),
    st.text(max_size=8),
)
references = st.lists(st.sampled_from(NAMES), max_size=4).map(Reference)
values = st.recursive(
    st.one_of(scalars, references),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
documents = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), values, max_size=6)


def _run(path: Path) -> tuple[int, str]:
    """`check-ci PATH`: its exit code and all it printed."""
    run = run_command("check-ci", str(path))
    return run.code, run.out + run.err


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copytree(FIXTURES / "training-repo", tmp_path_factory.mktemp("fuzz") / "repo"))


@pytest.fixture(autouse=True)
def _stack_read_once(monkeypatch: pytest.MonkeyPatch, dev_stack: StackConfig) -> None:
    """The stack file is not what is fuzzed: read it once, not per example (the YAML parse dominates)."""
    monkeypatch.setattr(check_ci, "load_stack_config", lambda *args, **kwargs: dev_stack)


def _mutate(document: Any, path: list[int], value: Any, delete: bool) -> Any:
    """Replace (or delete) the node that `path` picks, walking mappings and lists by index."""
    if not path or not isinstance(document, (dict, list)) or not document:
        return value
    items = list(document.items()) if isinstance(document, dict) else list(enumerate(document))
    key, child = items[path[0] % len(items)]
    replaced = None if delete and len(path) == 1 else _mutate(child, path[1:], value, delete)
    if isinstance(document, dict):
        copy = dict(document)
        if delete and len(path) == 1:
            del copy[key]
        else:
            copy[key] = replaced
        return copy
    copy_list = list(document)
    copy_list[key] = replaced
    return copy_list


@functools.cache
def _fixture(name: str) -> Any:
    source = FIXTURES / name / ".gitlab-ci.yml"
    return read_yaml(source.read_text(), source.name)


SETTINGS = settings(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(document=st.one_of(documents, values))
def test_random_documents_never_end_in_a_traceback(repo: Path, document: Any) -> None:
    path = repo / "random.yml"
    path.write_text(yaml.dump(document, Dumper=_Dumper))
    code, output = _run(path)
    assert code in (0, 1, 2), output
    assert "Traceback" not in output


@SETTINGS
@given(
    fixture=st.sampled_from(["training-repo", "training-repo-broken"]),
    path=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    value=values,
    delete=st.booleans(),
)
def test_mutated_fixture_pipelines_never_end_in_a_traceback(
    repo: Path, fixture: str, path: list[int], value: Any, delete: bool
) -> None:
    mutated = _mutate(_fixture(fixture), path, value, delete)
    target = repo / "mutated.yml"
    target.write_text(yaml.dump(mutated, Dumper=_Dumper))
    code, output = _run(target)
    assert code in (0, 1, 2), output
    assert "Traceback" not in output


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("ab: -[]{}!&*\n\"'#|>.%@`")), max_size=60))
def test_random_text_never_ends_in_a_traceback(repo: Path, text: str) -> None:
    path = repo / "text.yml"
    path.write_text(text)
    code, output = _run(path)
    assert code in (0, 1, 2), output


# --- hostile pipelines -------------------------------------------------------------------------------------------

TOKEN = "glpat-" + "Q" * 20
OUTSIDE = "OUTSIDE-SECRET"
HOSTILE_NAMES = [
    "train-validate-dqn",
    "hyperopt-tft",
    "report",
    "evil\nerror: forged",
    "\x1b[2J\x1b[31mred",
    "bidi\u202eevil",
    f"leak-{TOKEN}",
    "x" * 600,
    "job: [a, b]",
]
TAGS = [
    "kapsule",
    "gpu",
    "ci-compile",
    "ci-training",
    "docker",
    "$POOL",
    "${POOL}",
    "%POOL%",
    "$CI_X",
    TOKEN,
    "kapsule,gpu",
    "\tgpu ,",
    "'ci-training', kapsule",
    '"a,b',
]
VALUES = [
    "8Gi",
    "64Gi",
    "2 cores",
    "k8s.scaleway.com/pool-name=ci-training-evil",
    "$OTHER",
    "${POOL}$POOL$POOL",
    TOKEN,
    [1, 2],
    1.5,
    True,
    None,
    {"value": "1", "expand": False},
    {"value": [1], "scope": "x"},
]
INCLUDES = [
    "ci/*.yml",
    "ci/**.yml",
    "**a**a**a**a**a**a**a**a**a**b.yml",
    "ci/link.yml",
    "ci/outside.yml",
    "ci/proc.yml",
    "missing.yml",
    "../outside/secret.yml",
    {"local": "ci/a.yml"},
    {"project": "ml-team/training", "file": ".gitlab/ci/gpu-ci-templates.yml"},
    {"remote": "https://example.com/ci.yml"},
    5,
]
RESOURCES = ["KUBERNETES_MEMORY_LIMIT", "KUBERNETES_CPU_REQUEST", "KUBERNETES_NODE_SELECTOR_POOL", "POOL", "OTHER"]
HOSTILE_CHARACTERS = list("ab-\n\t\x00\x07\u2028é")
variable_blocks = st.dictionaries(
    st.sampled_from([*RESOURCES, "FF_X", "CUDA_MPS_X"]), st.sampled_from(VALUES), max_size=3
)
names = st.sampled_from(HOSTILE_NAMES) | st.text(st.sampled_from(HOSTILE_CHARACTERS), min_size=1, max_size=8)
templates = st.sampled_from([".train-rl-base", ".train-validate-base", ".t0", ".t1", ".t2", ".t3"])


@st.composite
def hostile_jobs(draw: st.DrawFn, benign: bool) -> dict[str, Any]:
    """A job of hostile pieces; a `benign` one extends a platform template and sets plausible values only."""
    job: dict[str, Any]
    if benign:
        job = {"extends": draw(st.sampled_from([".train-rl-base", ".train-validate-base"])), "script": ["x"]}
        if draw(st.booleans()):
            job["variables"] = {"MODEL": draw(st.sampled_from(["dqn", "$POOL", "1"]))}
        return job
    job = {
        "script": draw(st.sampled_from([["x"], ["x"], [1], "x"])),
        "stage": draw(st.sampled_from(["train", "train", "build", "nope"])),
    }
    if draw(st.booleans()):
        job["extends"] = draw(st.lists(templates, min_size=1, max_size=3))
    if draw(st.booleans()):
        job["tags"] = draw(st.lists(st.sampled_from(TAGS), max_size=3))
    if draw(st.booleans()):
        job["variables"] = draw(st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(VALUES), max_size=3))
    if draw(st.booleans()):
        rules = [{"if": "$X", "when": "never"}, {"when": "always"}, {"changes": ["a"]}, "x", [{"when": "never"}]]
        job["rules"] = draw(st.lists(st.sampled_from(rules), max_size=2))
        if draw(st.booleans()):
            job["rules"].insert(0, {"variables": draw(st.one_of(st.sampled_from(VALUES), variable_blocks))})
    if draw(st.booleans()):
        job["image"] = draw(st.sampled_from(["python:3.12", "$POOL/x", "rg.fr-par.scw.cloud/gpu-ci/x:1", {"x": 1}]))
    if draw(st.booleans()):
        services = ["postgres:16", "{a,b}", 5, {"name": "x", "variables": {"NVIDIA_X": "1"}}, {"variables": [1]}]
        job["services"] = draw(st.lists(st.sampled_from(services), max_size=2))
    if draw(st.booleans()):
        width = draw(st.integers(1, 40))
        columns = draw(st.lists(st.sampled_from(["POOL", "A", "KUBERNETES_MEMORY_LIMIT"]), min_size=1, max_size=3))
        job["parallel"] = {"matrix": [{c: [f"{c[0]}{i}" for i in range(width)] for c in columns}]}
    return job


@st.composite
def hostile_repos(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A pipeline document (and raw YAML appended to it) of hostile pieces: names, extends graphs (cycles, depth),
    variables of every type and nesting, tags through variables, images, matrices, includes of every kind."""
    document: dict[Any, Any] = {"stages": ["build", "train"]}  # a key YAML reads as a number too
    benign = draw(st.integers(0, 3)) == 0
    platform = [INCLUDES[9]] if benign or draw(st.integers(0, 3)) else []  # mostly: the templates jobs extend
    others = draw(st.lists(st.sampled_from(INCLUDES), max_size=2)) if not benign and draw(st.booleans()) else []
    if platform or others:
        document["include"] = platform + others
    if not benign and draw(st.booleans()):
        document["workflow"] = {"rules": [{"variables": draw(variable_blocks)}, draw(st.sampled_from(VALUES))]}
    if not benign and draw(st.booleans()):
        document[draw(st.sampled_from([3.1, 0.5, 5, True, None]))] = draw(hostile_jobs(benign=False))
    if not benign and draw(st.booleans()):
        document["variables"] = draw(st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(VALUES), max_size=3))
    for index in range(4):  # templates: extends in any direction, so cycles and chains
        if not benign and draw(st.booleans()):
            parents = draw(st.lists(templates, max_size=3))
            document[f".t{index}"] = {"extends": parents, "variables": {"POOL": draw(st.sampled_from(TAGS))}}
    document.update(draw(st.dictionaries(names, hostile_jobs(benign), min_size=1, max_size=4)))
    raw = ""
    if benign:
        return document, raw
    depth = draw(st.sampled_from([0, 0, 0, 0, 0, 0, 10, 62, 200]))
    if depth:
        raw += ".deep: " + "[" * depth + "]" * depth + "\n"
    levels = draw(st.sampled_from([0, 0, 0, 0, 0, 0, 2, 4, 8]))
    if levels:
        raw += ".b0: &b0 [x, x, x, x, x, x, x, x, x, x]\n"
        raw += "".join(f".b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]\n" for i in range(1, levels + 1))
    return document, raw


def _hostile_checkout(base: Path, document: dict[str, Any], raw: str) -> Path:
    repo = base / "repo"
    (repo / "ci").mkdir(parents=True)
    (base / "outside").mkdir()
    (base / "outside" / "secret.yml").write_text(f"{OUTSIDE}: {{script: [x], tags: [kapsule]}}\nbroken: [\n")
    (repo / "ci" / "a.yml").write_text("ci-job: {script: [x], tags: [kapsule, gpu], stage: build}\n")
    (repo / "ci" / "link.yml").symlink_to(repo / "ci" / "a.yml")
    (repo / "ci" / "outside.yml").symlink_to(base / "outside" / "secret.yml")
    (repo / "ci" / "proc.yml").symlink_to("/proc/1/cwd")
    (repo / ".gitlab-ci.yml").write_text(yaml.dump(document, Dumper=_Dumper, allow_unicode=False) + raw)
    return repo


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(repo=hostile_repos())
def test_hostile_pipelines_get_a_plausible_answer_or_short_error_lines(
    tmp_path_factory: pytest.TempPathFactory, repo: tuple[dict[str, Any], str]
) -> None:
    """Exit 0 with a plausible count, or 1/2 with short `error:`/violation lines; never a traceback, a raw
    control character, a token or a byte of a file outside the repository in the output."""
    checkout = _hostile_checkout(tmp_path_factory.mktemp("hostile"), *repo)
    run = run_command("check-ci", str(checkout))
    output = run.out + run.err
    assert "Traceback" not in output and TOKEN not in output and OUTSIDE not in output, output
    lines = output.splitlines()
    assert all(len(line) <= check_ci.MAX_LINE + len("warning: ") for line in lines), output
    assert all(line.isprintable() for line in lines), output
    errors = [line for line in run.err.splitlines() if not line.startswith("warning: ")]
    if run.code == 0:
        assert run.out == "" and re.fullmatch(r"\d+ jobs checked: no violation", errors[-1]), output
        assert int(errors[-1].split()[0]) <= 200 * len(repo[0]) + 1
    elif run.code == 1:
        violations = run.out.splitlines()
        assert violations and errors == [f"{len(violations)} violation(s) in {errors[-1].split()[-2]} jobs"], output
    else:
        assert run.code == 2 and run.out == "" and len(errors) == 1 and errors[0].startswith("error: "), output


# --- the same job in other spellings (issue 30): tags as GitLab parses them, guards from every source ---------------

GUARDS = [
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "FF_NETWORK_PER_BUILD",
]
RUNNER_TAGS = {"ci-compile": ["kapsule", "gpu"], "ci-training": ["kapsule", "ci-training"]}
PADDING = st.text(st.sampled_from([" ", "\t"]), max_size=2)


@st.composite
def tag_spellings(draw: st.DrawFn, tags: list[str]) -> tuple[list[str], dict[str, str]]:
    """`tags` written another way GitLab parses back to them: shuffled, padded, grouped by commas (some quoted),
    with empty pieces, repeated, or given by a variable (named in the returned mapping) holding several."""
    order = draw(st.permutations(tags))
    pieces = [draw(PADDING) + (f"'{tag}'" if draw(st.booleans()) else tag) + draw(PADDING) for tag in order]
    pieces += [tag for tag in tags if draw(st.integers(0, 3)) == 0]
    groups: list[list[str]] = []
    for piece in pieces:
        joined = draw(st.booleans())
        if groups and joined:
            groups[-1].append(piece)
        else:
            groups.append([piece])
    written = [",".join(group) + ("," * draw(st.integers(0, 2))) for group in groups]
    variables: dict[str, str] = {}
    for index, text in enumerate(written):
        if draw(st.integers(0, 2)) == 0:
            variables[f"T{index}"] = text
            written[index] = draw(st.sampled_from([f"$T{index}", f"${{T{index}}}", f"%T{index}%"]))
    return written, variables


@st.composite
def disarming_jobs(draw: st.DrawFn) -> tuple[dict[str, Any], str, str]:
    """A pipeline with one job on a GPU runner (tags in another spelling) and a guard variable set in one of the
    places GitLab puts it in the job's environment; the pool and the guard."""
    pool = draw(st.sampled_from(sorted(RUNNER_TAGS)))
    written, tag_variables = draw(tag_spellings(RUNNER_TAGS[pool]))
    guard, value = draw(st.sampled_from(GUARDS)), draw(st.sampled_from(["all", "0", "false", "none"]))
    job: dict[str, Any] = {"stage": "build", "script": ["x"], "tags": written}
    document: dict[str, Any] = {"stages": ["build"]}
    tag_home = draw(st.sampled_from(["job", "global", "workflow"]))
    if tag_home == "job":
        job["variables"] = dict(tag_variables)
    elif tag_home == "global":
        document["variables"] = dict(tag_variables)
    workflow_variables = dict(tag_variables) if tag_home == "workflow" else {}
    place = draw(st.sampled_from(["job", "global", "rule", "workflow", "service"]))
    if place == "job":
        job.setdefault("variables", {})[guard] = value
    elif place == "global":
        document.setdefault("variables", {})[guard] = value
    elif place == "workflow":
        workflow_variables[guard] = value
    elif place == "service":
        job["services"] = [{"name": "rg.fr-par.scw.cloud/gpu-ci/sidecar:1", "variables": {guard: value}}]
    else:
        before = draw(st.lists(st.sampled_from([{"if": "$A", "when": "never"}, {"changes": ["x"]}]), max_size=2))
        rule: dict[str, Any] = {"variables": {guard: value}}
        if draw(st.booleans()):
            rule["if"] = draw(st.sampled_from(["$NIGHTLY", '$CI_COMMIT_BRANCH == "main"']))
        job["rules"] = [*before, rule, {"when": "manual"}]
    if workflow_variables:
        document["workflow"] = {"rules": [{"if": "$CI_COMMIT_TAG", "when": "never"}, {"variables": workflow_variables}]}
    document[draw(st.sampled_from(["report", "eval-x", "smoke"]))] = job
    return document, pool, guard


@settings(max_examples=40, deadline=None, derandomize=True)
@given(case=disarming_jobs())
def test_a_guard_is_found_whatever_the_spelling_of_the_tags_and_the_source_of_the_variable(
    case: tuple[dict[str, Any], str, str],
) -> None:
    """Never "no violation" for a job GitLab puts on a GPU runner with a guard disarmed (tags split, padded, quoted
    or through variables of the job, the global block or a workflow rule; the guard in the job's, the global, a
    reachable rule's, a workflow rule's or a service's variables); and check-ci routes it to that runner's pool."""
    document, pool, guard = case
    result = check_resolved(resolve_text(yaml.safe_dump(document), "generated.yml"), _dev_platform())
    lines = [str(v) for v in result.violations]
    assert any(f"sets {guard}: " in line for line in lines), (document, lines)
    assert list(result.routes.values()) == [{pool}], result.routes


@functools.cache
def _dev_platform() -> Platform:
    return load_platform(load_stack_config("dev").get("platform"))
