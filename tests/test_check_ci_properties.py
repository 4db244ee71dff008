"""check-ci never ends in a traceback: random YAML documents and mutated copies of the fixture pipelines
give exit 0, 1 or 2 (the CLI's `main()` in-process, hypothesis)."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plans import run_command

from infra.cli import check_ci
from infra.offline.stack_config import StackConfig
from infra.pipeline.resolve import Reference, read_yaml

FIXTURES = Path(__file__).parent / "fixtures"
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


SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


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
