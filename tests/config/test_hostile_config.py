"""Hostile stack configs: a seeded fuzz of the dev spec, the stack-file loader through the whole CLI, a second
stack that would collide with dev, and the settings that guard against silent takeovers."""

from __future__ import annotations

import contextlib
import copy
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import ROOT
from support.stack_files import BROKEN, StackFile

from infra.__main__ import main as cli_main
from infra.capacity import MANAGER_MEMORY_REQUEST
from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig, load_stack_config
from infra.offline.stacks import stack_collisions

# --- the fuzz: the same families of mutation as the one that found the bugs ---

HOSTILE = st.sampled_from(
    [
        "",
        " ",
        "\n",
        "gpu\n",
        "ci-compile\n",
        "a" * 5000,
        "x" * 300_000,
        "1e999999999",
        "1e-999999999",
        "9" * 5000,
        ".5",
        "3000",
        "1E",
        "-1",
        "0",
        "NaN",
        "${REGISTRY}",
        "../../etc/passwd",
        ".gitlab-ci.yml",
        "hf_abcdefghijklmnopqrstuvwxyz0123",
        "glpat-abcdefghijklmnop1234",
        "\x00",
        "é",
        "L4-1-24GB",
        "5m\n",
        "l4_1_24g",
        "PRO2-XXS ",
        "\u202eci-compile",
        "ci\xa0compile",
        "gpu\u2028",
        "\u0661.\u0663\u0665",
        "\uff15m",
        "alpine:{{ .Values.x }}",
        "0c4e2a9f-7d31-4b8e-a5f6-9e8d7c6b5a40",
    ]
)
NUMBERS = st.one_of(
    st.sampled_from([0, -1, 1, 2, 10**9, 10**30, 10**5000 - 1, 2**63, 0.5, 1e30, -0.0]),
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
    st.integers(min_value=-(10**6), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
)
WRONG_TYPES = st.sampled_from(
    [
        None,
        True,
        False,
        [],
        {},
        [1, 2],
        {"a": 1},
        ["x"] * 3,
        b"glpat-Abcdefghijklmnop1234",  # what !!binary makes (simulate --set)
        b"\xff\xfe",
        {"kapsule"},  # !!set
        datetime.date(2026, 12, 1),  # !!timestamp
        (1, 2),  # !!pairs
        {7: "a"},  # a key YAML read as a number
    ]
)
VALUES = st.one_of(HOSTILE, NUMBERS, WRONG_TYPES)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of the dev platform object (dict keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _rich_dev() -> dict[str, Any]:
    """The dev platform plus the optional sections it leaves out, so mutations reach them too."""
    platform = copy.deepcopy(load_stack_config("dev").get("platform"))
    platform["node_types"] = {"L4-1-24G": {"eur_per_hour": 0.8, "reserve": {"cpu": "1", "memory": "4Gi"}}}
    platform["pools"]["ci-compile"]["labels"] = {"team": "ml"}
    platform["cluster"]["private_network_subnet"] = "172.16.0.0/22"
    platform["runner"]["cache"] = {"bucket": "gpu-ci-cache", "expire_days": 30}
    platform["ci"]["variables"] = {"DATASET_URI": "s3://datasets/lob", "HF_TOKEN": {"secret": "hf_token"}}
    load_platform(platform)  # still valid
    return platform


DEV = _rich_dev()
PATHS = _paths(DEV)


def _mutate(platform: dict[str, Any], path: tuple[Any, ...], kind: str, value: Any, data: st.DataObject) -> None:
    parent = platform
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "set":
        parent[last] = value
    elif kind == "typo" and isinstance(parent, dict):
        parent[f"{last}x" if data.draw(st.booleans()) else str(last)[:-1] or "x"] = parent.pop(last)
    elif kind == "duplicate" and isinstance(parent, dict):
        parent[f"{last}-copy"] = copy.deepcopy(parent[last])
    elif kind == "neighbour":
        other = data.draw(st.sampled_from(PATHS))
        node = platform
        with contextlib.suppress(KeyError, IndexError, TypeError):
            for part in other:
                node = node[part]
            parent[last] = copy.deepcopy(node)
    elif kind == "newline" and isinstance(parent[last], str):
        parent[last] += "\n"
    elif kind == "rename-key" and isinstance(parent, dict):
        parent[value if isinstance(value, str) else str(last) + "\n"] = parent.pop(last)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    mutations=st.lists(
        st.tuples(
            st.sampled_from(PATHS),
            st.sampled_from(["delete", "set", "typo", "duplicate", "neighbour", "newline", "rename-key"]),
            VALUES,
        ),
        min_size=1,
        max_size=3,
    ),
    data=st.data(),
)
def test_a_mutated_dev_spec_is_refused_cleanly_and_fast(mutations: list[tuple[Any, str, Any]], data: Any) -> None:
    platform = copy.deepcopy(DEV)
    for path, kind, value in mutations:
        with contextlib.suppress(KeyError, IndexError, TypeError):
            _mutate(platform, path, kind, value, data)
    try:
        load_platform(platform)
    except SpecError as err:
        lines = str(err).splitlines()
        assert lines
        for line in lines:
            assert line.startswith("platform"), line
            assert "=" in line.split(": ", 1)[0] or line.startswith("platform="), line
            assert len(line) < 1200, len(line)


def test_the_manager_pool_holds_one_manager_per_runner(dev_platform: dict[str, Any]) -> None:
    """Two GPU pools have runners, so two managers: 200Mi left on the system node holds one, not two."""
    platform = load_platform(dev_platform)
    node = platform.spec.pool_node("system")
    assert node is not None and node.allocatable_memory_bytes >= len(platform.runners) * MANAGER_MEMORY_REQUEST.bytes
    dev_platform["node_types"] = {"PRO2-XXS": {"reserve": {"cpu": "1", "memory": f"{8 * 1024 - 200}Mi"}}}
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert str(caught.value) == (
        "platform.pools.system.node_type='PRO2-XXS': cannot hold the 2 runner managers (100m, 128Mi each): "
        "allocatable memory 200Mi < 256Mi after the node's reserve; pick a larger type or lower allocatable_reserve"
    )


# --- the stack-file loader, through the whole CLI in-process ---


def _plan(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = cli_main(["plan", "--json", "--config", str(path)])
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("case", [c for c in BROKEN if c.offline_error], ids=lambda c: c.id)
def test_a_broken_stack_file_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: StackFile
) -> None:
    """The corpus's broken files (tests/support/stack_files.py; the real CLI reads them too: tests/engine)."""
    path = tmp_path / "stack.yaml"
    path.write_bytes(case.content)
    code, err = _plan(path, capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith(f"error: stack.yaml:{case.offline_error}"), err


def test_an_alias_bomb_and_a_huge_file_and_a_directory_are_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["config:", '  a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    big = tmp_path / "big.yaml"
    big.write_text('config:\n  x: "' + "a" * (1 << 20) + '"\n')
    assert _plan(bomb, capsys) == (
        2,
        [
            "error: bomb.yaml:6: expands to more than 50000 values (each alias counted where it is used), "
            "not a stack config"
        ],
    )
    assert _plan(big, capsys) == (2, ["error: big.yaml: larger than 1024 KiB, not a stack file"])
    assert _plan(tmp_path, capsys)[1] == [f"error: {tmp_path.name}: is a directory, not a stack file"]


def test_a_spec_error_through_the_cli_is_error_lines_only(
    dev_platform: dict[str, Any], stack_file: Callable[[dict[str, Any]], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dev_platform["profiles"]["rl"]["cpu_request"] = "1e999999999"
    path = stack_file(dev_platform)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "1e999999999" in text)
    assert _plan(path, capsys) == (
        2,
        [
            f"error: {path.name}:{line}: platform.profiles.rl.cpu_request='1e999999999': exponent 999999999 is too "
            "large: Kubernetes keeps quantities as int64 milli-units"
        ],
    )


def test_the_program_refuses_a_provider_credential_in_plain_text(dev_stack: StackConfig) -> None:
    run = run_program(dev_stack.with_values({"gitlab:token": "glpat-abcdefghijklmnop"}), check=False)
    assert isinstance(run.error, pulumi.RunError)
    assert (
        str(run.error)
        == "Pulumi.dev.yaml: gitlab:token is stored in plain text: pulumi config set --secret gitlab:token ..."
    )
    assert run.resources == []
    fine = run_program(dev_stack.with_values({"gitlab:token": "x"}, secret_keys=("gitlab:token",)), check=False)
    assert fine.error is None


# --- two stacks of one project ---

PROD_SETTINGS = {
    "cluster": {"name": "gpu-ci-prod"},
    "registry": {"namespace": "gpu-ci-prod"},
    "runner": {"tags": ["kapsule-prod", "gpu"], "pool_tags": ["kapsule-prod"]},
    "ci": {
        "templates_path": ".gitlab/ci/gpu-ci-prod-templates.yml",
        "registry_variable": "REGISTRY_PROD",
        "image": "${REGISTRY_PROD}/training:${CI_COMMIT_SHA}",
    },
}


def _project(tmp_path: Path, prod: dict[str, Any]) -> StackConfig:
    """A project folder with the dev stack and a prod stack: dev's config with `prod`'s sections merged in."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    platform = document["config"]["gpu-ci:platform"]
    for section, values in prod.items():
        platform[section].update(values)
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(document))
    return load_stack_config("prod", tmp_path)


def test_a_copy_of_dev_as_a_second_stack_collides_on_every_shared_name(tmp_path: Path) -> None:
    prod = _project(tmp_path, {})
    found = [str(p) for p in stack_collisions(load_platform(prod.get("platform")), tmp_path / "Pulumi.prod.yaml")]
    assert [line.split("=")[0] for line in found] == [
        "platform.ci.templates_path",
        "platform.ci.registry_variable",
        "platform.registry.namespace",
        "platform.cluster.name",
        "platform.runner.tags",
    ]
    assert found[-1].startswith("platform.runner.tags=['kapsule', 'gpu']: jobs of one stack would be taken")


def test_a_second_stack_with_its_own_names_plans_beside_dev(tmp_path: Path) -> None:
    prod = _project(tmp_path, PROD_SETTINGS)
    assert stack_collisions(load_platform(prod.get("platform")), tmp_path / "Pulumi.prod.yaml") == []
    run = run_program(prod)
    variables = [r.plain_inputs["key"] for r in run.resources if r.type.endswith("ProjectVariable")]
    assert variables == ["REGISTRY_PROD"]
    files = [r.plain_inputs for r in run.resources if r.type.endswith("RepositoryFile")]
    assert [(f["filePath"], f["overwriteOnCreate"]) for f in files] == [(".gitlab/ci/gpu-ci-prod-templates.yml", False)]


def test_adopting_an_existing_templates_file_is_explicit_and_dev_keeps_its_names(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    dev_platform["ci"]["adopt_existing_templates"] = True
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    (templates,) = [r for r in run.resources if r.type.endswith("RepositoryFile")]
    assert templates.plain_inputs["overwriteOnCreate"] is True
    assert templates.plain_inputs["filePath"] == ".gitlab/ci/gpu-ci-templates.yml"
    assert [r.plain_inputs["key"] for r in run.resources if r.type.endswith("ProjectVariable")] == ["REGISTRY"]


def test_a_valid_stack_file_with_ordinary_aliases_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The alias budget leaves room for ordinary anchors: the dev stack with its zones as one alias plans (exit 0)."""
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    first = text.index("zone: fr-par-2")
    text = (
        text[:first]
        + "zone: &zone fr-par-2"
        + text[first + len("zone: fr-par-2") :].replace("zone: fr-par-2", "zone: *zone")
    )
    assert text.count("*zone") == 2
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    assert cli_main(["plan", "--json", "--config", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert '"stack": "dev"' in captured.out


def test_plan_refuses_a_second_stack_file_that_collides_and_plans_one_that_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, {})
    code, err = _plan(tmp_path / "Pulumi.prod.yaml", capsys)
    assert code == 2
    assert err[0] == (
        "error: platform.ci.templates_path='.gitlab/ci/gpu-ci-templates.yml': also used by stack 'dev' in "
        "ml-team/training: each up would rewrite the other's templates; give each stack its own"
    )
    assert len(err) == 5 and all(line.startswith("error: platform.") for line in err)
    _project(tmp_path, PROD_SETTINGS)
    assert _plan(tmp_path / "Pulumi.prod.yaml", capsys) == (0, [])


TOKEN = "glpat-Abcdefghijklmnop1234"
SECRET = "hunter2-is-my-password"
IN_CLEAR = st.sampled_from(
    [
        TOKEN,
        f"x{TOKEN}",
        f"{TOKEN}\n",
        f"https://oauth2:{TOKEN}@gitlab.com",
        f"https://me:{SECRET}@gitlab.com",
        TOKEN.encode(),  # bytes, as !!binary makes them: base64 hid the token from a scan of strings
    ]
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(path=st.sampled_from(PATHS), value=IN_CLEAR, as_key=st.booleans())
def test_a_credential_anywhere_in_the_spec_is_never_printed(
    path: tuple[Any, ...], value: str | bytes, as_key: bool
) -> None:
    """Typed into any field (a name, a URL, an unknown key, a key itself): refused or warned, never echoed."""
    platform = copy.deepcopy(DEV)
    parent: Any = platform
    for part in path[:-1]:
        parent = parent[part]
    if as_key and isinstance(parent, dict):
        parent[value] = parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    try:
        shown = "\n".join(str(w) for w in load_platform(platform).warnings)
    except SpecError as err:
        shown = str(err)
    assert TOKEN not in shown and SECRET not in shown, shown
