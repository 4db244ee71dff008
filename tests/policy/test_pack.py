"""The pack (policy/policies/pack.py, policy/__main__.py): what it runs, that it agrees with the program, and
every rule over the real program's resources.

The pack cannot run here (`pulumi preview --policy-pack` needs the CLI), and `policy/__main__.py` is never
imported: building the PolicyPack starts a gRPC server and blocks.
"""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import tomli_w
import yaml
from support import requirements
from support.imports import statements as import_statements
from support.policy import (
    BUCKET,
    CLUSTER,
    CONFIG_MAP,
    NAMESPACE,
    PACK_REFUSALS,
    PACK_SECRETS,
    POLICY_DIR,
    POOL,
    PROJECT_VARIABLE,
    RELEASE,
)

from infra.catalog import BUILTIN_NODE_TYPES
from infra.config.errors import SpecError
from infra.config.gpu_operator import GpuOperatorSpec
from infra.config.load import load_spec
from infra.config.pools import GPU_TAINT_EFFECT, GPU_TAINT_KEY, PoolSpec
from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL
from infra.offline import policy_check
from infra.offline.harness import ProgramRun, run_program
from infra.offline.policy_check import analyzed, engine_props
from infra.offline.stack_config import StackConfig
from policy.policies import cluster_pools, definitions, runner_toml
from policy.policies import pack as pol
from policy.policies.runner_release import is_runner_release

# ---------------------------------------------------------------------------------------------------------
# The pack itself: what it runs, and that it agrees with the program


def test_the_pack_agrees_with_the_program_constants() -> None:
    assert cluster_pools.GPU_TAINT_KEY == GPU_TAINT_KEY
    assert GPU_TAINT_EFFECT in cluster_pools.GPU_TAINT_EFFECTS
    assert cluster_pools.DEVICE_PLUGIN_CONFIG_LABEL == DEVICE_PLUGIN_CONFIG_LABEL
    assert GpuOperatorSpec().config_map == cluster_pools.DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    default_cold_start = PoolSpec(node_type="L4-1-24G", zone="fr-par-2").cold_start_minutes
    assert 60 * default_cold_start == definitions.DEFAULT_MIN_POLL_TIMEOUT_SECONDS
    for node in BUILTIN_NODE_TYPES.values():
        assert cluster_pools.is_gpu_pool(engine_props({"nodeType": node.name})) is node.is_gpu, node.name


def test_policies_have_unique_names_and_schema_defaults_that_match_the_code() -> None:
    names = [p.name for p in pol.POLICIES]
    assert len(names) == len(set(names)) == 19
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)
    schemas = {p.name: p.config_schema.properties for p in pol.POLICIES if p.config_schema}
    assert schemas["runner-poll-timeout-covers-cold-start"]["min_poll_timeout_seconds"]["default"] == 900
    assert (
        schemas["gpu-pool-scales-to-zero"]["gpu_node_type_pattern"]["default"]
        == cluster_pools.DEFAULT_GPU_NODE_TYPE_PATTERN
    )


def test_the_pack_project_runs_python_in_its_own_virtualenv() -> None:
    project = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text(encoding="utf-8"))
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    pack = requirements.pins(POLICY_DIR / "requirements.in")
    assert set(pack) == {"pulumi", "pulumi-policy"}
    assert pack == {name: requirements.pin(name) for name in pack}  # the versions the tests run


def test_the_pack_entry_point_only_builds_the_pack() -> None:
    tree = ast.parse((POLICY_DIR / "__main__.py").read_text(encoding="utf-8"))
    statements = [s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom)]
    docstring, build = statements
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert isinstance(build, ast.Expr) and isinstance(build.value, ast.Call)
    assert ast.unparse(build) == ("PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)")


# ---------------------------------------------------------------------------------------------------------
# Bridge: every rule over what the real program registers (an in-process stand-in for
# `pulumi preview --policy-pack policy/`).
#
# Caveats: the props are the program's raw inputs as the mocks recorded them, not what a provider's Check
# returns (no provider defaults, no normalisation); nothing is unknown (the mocks resolve every output);
# stack policies see the mocks' outputs (inputs echoed plus a few computed fields); read resources
# (`Cluster.get`) are left out, as the engine analyses registrations. A rule that passes here can still
# fail on a default a provider adds: the real preview is the authority.


def policy_report(run: ProgramRun, config: Mapping[str, Mapping[str, Any]] | None = None) -> list[tuple[str, str, str]]:
    """(policy, resource name, message) for every violation: the bridge `python -m infra plan` runs."""
    return [(v.policy, v.resource, v.message) for v in policy_check.policy_report(run, config, pack=pol)]


def test_the_rules_see_the_programs_resources(dev_run: ProgramRun) -> None:
    """Guards the bridge against passing vacuously: each rule finds what it checks."""
    run = dev_run
    pools = {r.plain_inputs["name"]: analyzed(r, None) for r in run.by_type(POOL)}
    assert {name for name, args in pools.items() if cluster_pools._gpu_pool(args)} == {"ci-compile", "ci-training"}
    releases = [analyzed(r, None) for r in run.by_type(RELEASE)]
    assert len(releases) == 2  # one runner per GPU pool
    for release in releases:
        assert is_runner_release(release)
        ((_, entry),) = runner_toml._runner_entries(release, lambda *_: pytest.fail("config.toml unreadable"))
        assert entry["kubernetes"]["poll_timeout"] == 49 * 60
    assert [analyzed(r, None).props["key"] for r in run.by_type(PROJECT_VARIABLE)] == ["REGISTRY"]
    assert len(run.by_type(CLUSTER)) == len(run.by_type(NAMESPACE)) == len(run.by_type(CONFIG_MAP)) == 1


def test_the_dev_stack_passes_every_rule(dev_run: ProgramRun) -> None:
    assert policy_report(dev_run) == []


def test_the_dev_stack_with_a_cache_and_a_secret_variable_passes_every_rule(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    dev_platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}, "HYPEROPT_SEED": "7"}
    secrets = {"runner_cache_access_key": "SCWPOLICYACCESSKEY00", "runner_cache_secret_key": "s", "wandb_api_key": "k"}
    stack = dev_stack.with_values({"platform": dev_platform, **secrets}, secret_keys=tuple(secrets))
    run = run_program(stack)
    assert {r.type for r in run.resources} >= {BUCKET, PROJECT_VARIABLE}
    assert policy_report(run) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            PACK_REFUSALS["gpu-min-size-1"],
            [
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): minSize=1: a GPU pool must scale to zero",
                )
            ],
        ),
        (
            PACK_REFUSALS["fixed-gpu-pool"],
            [
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): autoscaling=False",
                ),
                ("gpu-pool-scales-to-zero", "kapsule-ci-training", "GPU pool 'ci-training' (L40S-1-48G): minSize=1"),
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): ignoreChanges=[]",
                ),
            ],
        ),
        (
            PACK_REFUSALS["public-registry"],
            [("registry-namespace-private", "registry-namespace", "registry namespace 'gpu-ci': isPublic=True")],
        ),
        (
            PACK_REFUSALS["short-poll"],
            [
                (
                    "runner-poll-timeout-covers-cold-start",
                    "runner-ci-training-release",
                    "Helm release 'gitlab-runner-ci-training' (gitlab-runner): runners.config [[runners]] '0': "
                    "kubernetes.poll_timeout=240: below 900 s",
                ),
                (
                    "runner-poll-timeout-covers-cold-start",
                    "runner-release",
                    "Helm release 'gitlab-runner' (gitlab-runner): runners.config [[runners]] '0': "
                    "kubernetes.poll_timeout=240: below 900 s",
                ),
            ],
        ),
        (
            PACK_REFUSALS["unmasked-secret"],
            [
                (
                    "ci-secret-variables-masked",
                    "gitlab-ci-var-HF_TOKEN",
                    "CI variable 'HF_TOKEN' (ml-team/training): masked=False",
                )
            ],
        ),
    ],
    ids=["gpu-min-size-1", "fixed-gpu-pool", "public-registry", "short-poll", "unmasked-secret"],
)
def test_what_the_pack_refuses_the_spec_says_at_the_key(
    dev_stack: StackConfig, dev_platform: dict[str, Any], edit: Callable[[dict[str, Any]], None], expected: list
) -> None:
    """Valid for the spec (the program registers it), refused by the pack with its default config: the spec
    warns at the key (so `plan` shows it and, with the pack's verdict, exits 1), and the pack refuses."""
    edit(dev_platform)
    run = run_program(
        dev_stack.with_values({"platform": dev_platform, **PACK_SECRETS}, secret_keys=tuple(PACK_SECRETS))
    )
    found = sorted(policy_report(run))  # registration order depends on the event loop
    expected = sorted(expected)
    assert [(p, r) for p, r, _ in found] == [(p, r) for p, r, _ in expected]
    for (_, _, message), (_, _, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message
    warned = [message for level, message in run.logs if level == "warning"]
    said = {
        "gpu-pool-scales-to-zero": "platform.pools.ci-training.min_size=1: an always-on GPU pool",
        "registry-namespace-private": "platform.registry.is_public=true: the policy pack",
        "runner-poll-timeout-covers-cold-start": "platform.runner.node_wait_tolerance='8m': gives pool ci-training a "
        "poll_timeout of 240 s",
    }
    for policy, _, _ in found:
        if policy in said:
            assert any(w.startswith(said[policy]) for w in warned), (policy, warned)


def test_an_unprotected_cluster_cannot_be_asked_for(dev_platform: dict[str, Any]) -> None:
    """`cluster.protect` only existed to be refused by kapsule-cluster-protected: it is gone."""
    dev_platform["cluster"]["protect"] = False
    with pytest.raises(SpecError, match=r"^platform\.cluster\.protect=false: unknown key"):
        load_spec(dev_platform)


def test_the_policy_config_can_allow_an_always_on_gpu_pool(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    PACK_REFUSALS["gpu-min-size-1"](dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    config = {"gpu-pool-scales-to-zero": {"always_on_pools": ["ci-training"]}}
    assert policy_report(run, config) == []


def _broken(run: ProgramRun, type_token: str, name: str, change: Callable[[dict[str, Any]], None]) -> ProgramRun:
    """A copy of `run` whose recorded inputs (and outputs) of one resource are changed by `change`."""
    resources = []
    for recorded in run.resources:
        resource = recorded
        if recorded.type == type_token and recorded.name == name:
            resource = copy.deepcopy(recorded)
            change(resource.inputs)
            change(resource.outputs)
        resources.append(resource)
    return ProgramRun(resources, run.outputs, run.logs)


def _privileged(inputs: dict[str, Any]) -> None:
    config = inputs["values"]["runners"]["config"]
    assert "privileged = false\n" in config  # the program writes it explicitly
    inputs["values"]["runners"]["config"] = config.replace("privileged = false\n", "privileged = true\n")


@pytest.mark.parametrize(
    ("type_token", "name", "change", "expected"),
    [
        (
            RELEASE,
            "runner-release",
            _privileged,
            (("runner-job-pods-unprivileged", "runner-job-isolation"), "kubernetes.privileged=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"]["rbac"].update(clusterWideAccess=True),
            ("runner-rbac-namespaced", "values.rbac.clusterWideAccess=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"].update(strategy={"type": "RollingUpdate"}),
            ("helm-release-atomic", "atomic=unset"),
        ),
        (
            POOL,
            "kapsule-ci-compile",
            lambda i: i.update(taints=[]),
            ("gpu-pool-taint-and-config-label", "nvidia.com/gpu taint=none"),
        ),
        (
            POOL,
            "kapsule-ci-compile",
            lambda i: i["labels"].update({DEVICE_PLUGIN_CONFIG_LABEL: "ci-compil"}),
            ("gpu-pool-config-exists", "nvidia.com/device-plugin.config='ci-compil' is not a key"),
        ),
        (
            NAMESPACE,
            "registry-namespace",
            lambda i: i.update(isPublic=True),
            ("registry-namespace-private", "isPublic=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: _edit_runner_toml(i, _host_path_patch),
            ("runner-job-pods-unprivileged", "kubernetes.pod_spec[host].patch.volumes[0].hostPath='/var/run'"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: _edit_runner_toml(i, lambda k: k.update(service_account_overwrite_allowed=".*")),
            ("runner-no-identity-overrides", "kubernetes.service_account_overwrite_allowed='.*'"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"]["rbac"]["rules"].append({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}),
            ("rbac-least-privilege", "values.rbac.rules[8].resources contains '*'"),
        ),
        (
            "gitlab:index/userRunner:UserRunner",
            "runner-registration",
            lambda i: i.update(untagged=True),
            ("runner-registration-scoped", "untagged=True"),
        ),
    ],
    ids=[
        "privileged",
        "cluster-wide-rbac",
        "not-atomic",
        "untainted-gpu-pool",
        "missing-config-key",
        "public",
        "host-path-patch",
        "service-account-override",
        "wildcard-role",
        "untagged-runner",
    ],
)
def test_inputs_the_program_never_writes_are_refused(
    dev_run: ProgramRun, type_token: str, name: str, change: Callable[[dict[str, Any]], None], expected: tuple
) -> None:
    """What the spec cannot express (the program hard-codes it), broken in the recorded inputs instead."""
    run = _broken(dev_run, type_token, name, change)
    policies = expected[0] if isinstance(expected[0], tuple) else (expected[0],)
    found = policy_report(run)
    assert [(policy, resource) for policy, resource, _ in found] == [(policy, name) for policy in policies]
    assert expected[1] in found[0][2]


def _edit_runner_toml(inputs: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> None:
    """Change the `kubernetes` table of the (first) runner in the release's config.toml."""
    document = tomllib.loads(inputs["values"]["runners"]["config"])
    change(document["runners"][0]["kubernetes"])
    inputs["values"]["runners"]["config"] = tomli_w.dumps(document)


def _host_path_patch(kubernetes: dict[str, Any]) -> None:
    patch = "volumes:\n- name: docker\n  hostPath: {path: /var/run}\n"
    kubernetes["pod_spec"].append({"name": "host", "patch_type": "strategic", "patch": patch})


def test_an_unprotected_pool_is_refused(dev_run: ProgramRun) -> None:
    run = dev_run
    resources = []
    for recorded in run.resources:
        resource = copy.deepcopy(recorded) if recorded.name == "kapsule-system" else recorded
        if resource is not recorded:
            resource.options["protect"] = False
        resources.append(resource)
    found = policy_report(ProgramRun(resources, run.outputs, run.logs))
    assert [(p, r) for p, r, _ in found] == [("kapsule-pool-protected", "kapsule-system")]


def test_the_policy_config_can_restrict_the_runners_access_level(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_run: ProgramRun
) -> None:
    config = {"runner-registration-scoped": {"allowed_access_levels": ["ref_protected"]}}
    found = policy_report(dev_run, config)
    assert sorted((p, r) for p, r, _ in found) == [
        ("runner-registration-scoped", "runner-ci-training-registration"),
        ("runner-registration-scoped", "runner-registration"),
    ]
    assert "accessLevel='not_protected': allowed are ['ref_protected']" in found[0][2]
    dev_platform["runner"]["access_level"] = "ref_protected"
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    assert policy_report(run, config) == []


def test_the_pack_imports_only_what_its_virtualenv_has() -> None:
    """The pack's venv installs policy/requirements.txt (the lock of pulumi, pulumi-policy and what they require)
    and nothing else: every import is the standard library, pulumi-policy, or PyYAML, which the pulumi SDK itself
    requires and the lock holds."""
    imported = set()
    for path in [*POLICY_DIR.glob("*.py"), *(POLICY_DIR / "policies").glob("*.py")]:
        for node in import_statements(path):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "policies"}
    assert third_party == {"pulumi_policy", "yaml"}
    assert any(re.match(r"pyyaml\b", r, re.IGNORECASE) for r in importlib.metadata.requires("pulumi") or [])
    assert "pyyaml" in {entry.name for entry in requirements.locked(POLICY_DIR / "requirements.txt")}
