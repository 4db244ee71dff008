"""The dev stack under the real engine: `preview --policy-pack`, `up`, a second `preview` and `up` that change
nothing, and what the state, the outputs and every command's output hold of the secrets.

One deployment, shared: the session's `deployed_dev` (tests/conftest.py) and a second `up` on it, each
test reading what one command returned. The engine, the CLI, its stack config and secrets, the state, the
policy analyzer and the Kubernetes half (Pulumi's own provider, the test cluster's API server) are real; Scaleway
and GitLab are doubles (tests/support/doubles/provider.py; the Scaleway double's cluster is the test cluster) and
the language host is the SDK's inline runtime (tests/support/doubles/language_host.py), which replaces only the
Go host's process launch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.cluster import ControlPlane
from support.deployed import DEV_SECRETS, DeployedStack, fresh_test_cluster
from support.engine import UNKNOWN, EngineProject, Result, known_differences, preview_steps
from support.plans import plan_json

from infra.cli.plan import displayable
from infra.cloud.gpu_sharing import PATCH_FIELD_MANAGER
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import MOCK_RUNNER_TOKEN_PREFIX
from infra.offline.stack_config import load_stack_config
from infra.review.diff import diff_plans

SECRETS = DEV_SECRETS
"""Known secret values: none may appear in plain text anywhere the engine writes or prints."""


@dataclass
class Deployment:
    project: EngineProject
    plane: ControlPlane
    plan: dict[str, Any]
    """`plan --json`'s document for the same stack file."""
    plan_run: ProgramRun
    preview: Result
    up: Result
    up_records: list[dict[str, Any]]
    preview_again: Result
    refresh: Result
    """`refresh --expect-no-changes`: what the API server holds is what the state holds."""
    up_again: Result
    up_again_records: list[dict[str, Any]]
    exported: Result
    outputs: Result
    program_run: dict[str, Any]
    """The config the engine handed the program in the first preview (secrets masked by the language host)."""
    cli_config: dict[str, Any]
    """`pulumi config --json`: the CLI's reading of the same stack file."""


@pytest.fixture(scope="module")
def deployed(deployed_dev: DeployedStack) -> Deployment:
    """The session's deployment of the dev stack (tests/conftest.py), and a second `up` on it."""
    project = deployed_dev.project
    config = load_stack_config("dev", path=project.stack_file())
    run = run_program(config)
    cli_config = project.pulumi("config", "--json").json()
    project.clear_records()
    up_again = project.pulumi("up", "--yes", "--skip-preview", "--json", check=False)
    up_again_records = project.records()
    exported = project.pulumi("stack", "export")
    outputs = project.pulumi("stack", "output", "--json")
    return Deployment(
        project,
        deployed_dev.plane,
        plan_json(config, run),
        run,
        deployed_dev.preview,
        deployed_dev.up,
        deployed_dev.up_records,
        deployed_dev.preview_again,
        deployed_dev.refresh,
        up_again,
        up_again_records,
        exported,
        outputs,
        deployed_dev.program_run,
        cli_config,
    )


def _steps(preview: Result) -> list[dict[str, Any]]:
    return preview_steps(preview.json())


def _plan_resources(deployed: Deployment) -> dict[str, dict[str, Any]]:
    return {r["urn"]: r for r in deployed.plan["resources"]}


def test_preview_with_the_policy_pack_passes(deployed: Deployment) -> None:
    assert deployed.preview.returncode == 0, deployed.preview
    document = deployed.preview.json()
    assert not [d for d in document["diagnostics"] if d.get("severity") == "error"]
    assert deployed.plan["policy"] == [], "the dev stack passes plan's verdict, so it must pass the real pack"
    assert not [d for d in document["diagnostics"] if d.get("policyName")]


def test_preview_registers_what_plan_registers(deployed: Deployment) -> None:
    """Type, name, parent and protect of every resource: the engine's preview and the offline plan agree."""
    parents = {r.urn: r.parent for r in deployed.plan_run.resources}

    def shape(urn: str, type_: str, parent: str, protect: bool) -> tuple[str, str, str, str, bool]:
        return (urn, type_, urn.rsplit("::", maxsplit=1)[-1], parent, protect)

    engine = {
        shape(s["urn"], s["newState"]["type"], s["newState"].get("parent", ""), bool(s["newState"].get("protect")))
        for s in _steps(deployed.preview)
    }
    offline = {
        shape(r["urn"], r["type"], parents[r["urn"]], bool(r["options"]["protect"])) for r in deployed.plan["resources"]
    }
    assert engine == offline
    assert all(s["op"] == "create" for s in _steps(deployed.preview))


ENGINE_PROVIDER_INPUTS = {"__internal": {}, "version": "4.34.2"}
"""What the engine adds to the inputs of the program's Kubernetes provider resource: the plugin version the SDK
package asks for (its pulumi-plugin.json) and its own bookkeeping; the program does not send them as inputs."""


def test_preview_inputs_equal_plan_inputs_where_known(deployed: Deployment) -> None:
    plan = _plan_resources(deployed)
    differences = {}
    for step in _steps(deployed.preview):
        inputs = displayable(step["newState"].get("inputs", {}))
        if step["newState"]["type"].startswith("pulumi:providers:"):
            assert {k: inputs.pop(k) for k in ENGINE_PROVIDER_INPUTS} == ENGINE_PROVIDER_INPUTS
        if found := known_differences(inputs, plan[step["urn"]]["inputs"]):
            differences[step["urn"].split("::")[-1]] = found
    assert differences == {}
    unknown = {s["urn"].split("::")[-1] for s in _steps(deployed.preview) if UNKNOWN in json.dumps(s["newState"])}
    assert "kapsule-ci-compile" in unknown  # its clusterId: the comparison above did skip unknowns


def test_the_doubles_receive_the_inputs_plan_records(deployed: Deployment) -> None:
    """What each double (Scaleway, GitLab) was asked to create, secrets as the engine marked them, is plan's
    input document."""
    plan = _plan_resources(deployed)
    created = {r["urn"]: displayable(r["inputs"]) for r in deployed.up_records if r["method"] == "Create"}
    assert not [r for r in deployed.up_records if r["method"] == "Create" and r["preview"]]
    doubled = {
        urn
        for urn, r in plan.items()
        if r["custom"] and not r["type"].startswith(("pulumi:providers:", KUBERNETES_TYPES))
    }
    assert set(created) == doubled
    assert created == {urn: plan[urn]["inputs"] for urn in doubled}


KUBERNETES_TYPES = "kubernetes:"


def _kubernetes_resources(deployed: Deployment) -> list[dict[str, Any]]:
    state = deployed.exported.json()["deployment"]["resources"]
    return [r for r in state if r["type"].startswith(KUBERNETES_TYPES)]


def _plural(plane: ControlPlane, api_version: str, kind: str) -> tuple[str, bool]:
    """The API server's resource name of `kind` and whether it is namespaced (its discovery document)."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    (resource,) = [r for r in plane.get(base)["resources"] if r["kind"] == kind and "/" not in r["name"]]
    return f"{base}/{{namespace}}{resource['name']}", bool(resource["namespaced"])


def test_every_kubernetes_object_is_the_api_servers(deployed: Deployment) -> None:
    """Each Kubernetes resource the engine holds is an object the API server accepted and still serves, the
    same object (its uid); plan registers exactly these."""
    plan = _plan_resources(deployed)
    resources = [r for r in _kubernetes_resources(deployed) if r["type"] != "kubernetes:helm.sh/v3:Release"]
    assert {r["urn"] for r in _kubernetes_resources(deployed)} == {
        urn for urn, r in plan.items() if r["type"].startswith(KUBERNETES_TYPES)
    }
    missing = {}
    for resource in resources:
        outputs = resource["outputs"]
        template, namespaced = _plural(deployed.plane, outputs["apiVersion"], outputs["kind"])
        namespace = f"namespaces/{outputs['metadata']['namespace']}/" if namespaced else ""
        path = f"{template.format(namespace=namespace)}/{outputs['metadata']['name']}"
        live = deployed.plane.request("GET", path)
        if live.status_code != 200 or live.json()["metadata"]["uid"] != outputs["metadata"]["uid"]:
            missing[resource["urn"]] = f"{path}: {live.status_code}"
    assert missing == {}
    assert len(resources) >= 15, "the dev stack's namespaces, policies, secrets, wait Job, ConfigMap and patch"


def test_each_runner_release_is_installed_from_the_chart_repository(deployed: Deployment) -> None:
    releases = [r for r in _kubernetes_resources(deployed) if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert len(releases) == 2
    for release in releases:
        status = release["outputs"]["status"]
        assert (status["status"], status["chart"], status["version"]) == ("deployed", "gitlab-runner", "0.86.0")
        assert release["inputs"]["repositoryOpts"]["repo"].startswith("http://127.0.0.1:")
        namespace, name = status["namespace"], status["name"]
        deployment = deployed.plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
        assert deployment["metadata"]["labels"]["chart"] == "gitlab-runner-0.86.0"
        helm = deployed.plane.get(f"/api/v1/namespaces/{namespace}/secrets/sh.helm.release.v1.{name}.v1")
        assert helm["type"] == "helm.sh/release.v1"


def test_the_providers_are_configured_with_the_stack_config_and_never_see_a_secret_in_clear(
    deployed: Deployment,
) -> None:
    configured = {(r["provider"], r["urn"] or ""): r for r in deployed.up_records if r["method"] == "Configure"}
    gitlab = next(r for (p, _), r in configured.items() if p == "gitlab")
    assert gitlab["args"]["baseUrl"] == "https://gitlab.com/api/v4/"
    assert gitlab["args"]["token"] == "[secret]"
    assert all(r["accept_secrets"] for r in configured.values())
    # Pulumi's Kubernetes provider gets the cluster's kubeconfig as a secret input (what the state holds of it).
    state = deployed.exported.json()["deployment"]["resources"]
    kubernetes = [r for r in state if r["type"] == "pulumi:providers:kubernetes"]
    assert kubernetes and all(r["inputs"]["kubeconfig"].get("4dabf18193072939515e22adb298388d") for r in kubernetes)


def test_plugin_versions_are_the_ones_the_sdk_packages_ask_for(deployed: Deployment) -> None:
    state = deployed.exported.json()
    providers = {
        r["type"]: r["inputs"].get("version")
        for r in state["deployment"]["resources"]
        if r["type"].startswith("pulumi:providers:")
    }
    assert providers == {
        "pulumi:providers:scaleway": "1.60.0",
        "pulumi:providers:gitlab": "10.4.0",
        "pulumi:providers:kubernetes": "4.34.2",
    }


def test_up_creates_everything_and_nothing_is_downloaded(deployed: Deployment) -> None:
    assert deployed.up.returncode == 0
    assert f"{len(deployed.plan['resources']) + 1} created" in deployed.up.stdout  # plan's resources, the stack
    plugins = deployed.project.workdir / "home" / ".pulumi" / "plugins"
    assert not plugins.exists() or not any(plugins.iterdir()), "the engine installed a plugin"


def test_no_perpetual_diff(deployed: Deployment) -> None:
    """Server defaults, field managers and Helm's rendering included: the real provider's second preview and
    its refresh find nothing to change."""
    assert deployed.preview_again.returncode == 0, deployed.preview_again
    assert deployed.refresh.returncode == 0, deployed.refresh
    unchanged = len(deployed.plan["resources"]) + 1  # every resource plan registers, and the stack
    assert f"{unchanged} unchanged" in deployed.preview_again.stdout
    assert deployed.up_again.returncode == 0, deployed.up_again
    changes = {r["method"] for r in deployed.up_again_records} & {"Create", "Update", "Delete"}
    assert changes == set()
    assert not [r for r in deployed.up_again_records if r["method"] == "Diff" and r["changed"]]


def _everything_written(project: EngineProject) -> dict[str, str]:
    """Every file the engine wrote (state, history, backups, the stack file) and everything any command
    printed (the language host's and the doubles' records included)."""
    written = {}
    for folder in (project.state, project.records_dir, project.workdir / "home"):
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                written[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    written[str(project.stack_file())] = project.stack_file().read_text(encoding="utf-8")
    for index, result in enumerate(project.transcript):
        written[f"command {index}: pulumi {' '.join(result.args)}"] = result.output
    return written


def _provider_secrets(project: EngineProject, plane: ControlPlane) -> list[str]:
    """Secrets the doubles computed (what a provider returns and the SDK marks secret): runner tokens, the
    kubeconfig (the test cluster's) and its admin token, as the state holds them once decrypted. (The command
    that shows them is not in the project's transcript.)"""
    shown = project.pulumi("stack", "export", "--show-secrets").json()
    project.transcript.pop()
    found = []
    for resource in shown["deployment"]["resources"]:
        outputs = resource.get("outputs", {})
        if resource["type"] == "gitlab:index/userRunner:UserRunner":
            found.append(_plain(outputs["token"]))
        if resource["type"] == "scaleway:kubernetes/cluster:Cluster":
            kubeconfig = _plain(outputs["kubeconfigs"])[0]
            found += [kubeconfig["configFile"], kubeconfig["token"]]
    assert found and all(s.startswith(MOCK_RUNNER_TOKEN_PREFIX) or plane.admin_token in s for s in found)
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and "plaintext" in value:
        return json.loads(value["plaintext"])
    return value


def _leaks(project: EngineProject, secrets: list[str]) -> dict[str, str]:
    return {
        where: secret for where, text in _everything_written(project).items() for secret in secrets if secret in text
    }


def test_no_secret_in_the_clear(deployed: Deployment) -> None:
    assert _leaks(deployed.project, [*SECRETS.values(), *_provider_secrets(deployed.project, deployed.plane)]) == {}
    assert json.loads(deployed.outputs.stdout)["kubeconfig"] == "[secret]"


EVERY_SECRET = {
    **SECRETS,
    "runner_cache_access_key": "SCWENGINETESTCACHE00",
    "runner_cache_secret_key": "engine-test-cache-secret-5d7a",
    "wandb_api_key": "engine-test-wandb-key-0c3e",
}
"""The dev stack's secrets and every other one the spec can name: the runner cache's keys, a secret CI variable."""


def test_no_secret_the_spec_can_name_is_in_the_clear(tmp_path: Path) -> None:
    """On a test cluster of its own: the cache's Secret and the secret CI variable are what the shared stack
    does not deploy."""
    with fresh_test_cluster(tmp_path / "cluster") as cluster:
        _every_secret_deployed(EngineProject(tmp_path / "engine", cluster=cluster), cluster.plane)


def _every_secret_deployed(project: EngineProject, plane: ControlPlane) -> None:
    platform = load_stack_config("dev", path=project.stack_file()).get("platform")
    platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}}
    project.set_platform(platform)
    project.init_stack(EVERY_SECRET)
    project.pulumi("up", "--yes", "--skip-preview")
    project.pulumi("preview", "--diff", "--expect-no-changes")
    project.pulumi("stack", "export")
    project.pulumi("stack", "output", "--json")
    variables = [r for r in project.records("Create") if r["type"] == "gitlab:index/projectVariable:ProjectVariable"]
    assert {r["inputs"]["key"]: r["inputs"]["value"] for r in variables}["WANDB_API_KEY"] == "[secret]"
    assert _leaks(project, [*EVERY_SECRET.values(), *_provider_secrets(project, plane)]) == {}


def test_the_state_is_the_one_stack_export_shows(deployed: Deployment) -> None:
    state_files = list((deployed.project.state / ".pulumi" / "stacks").rglob("dev.json"))
    assert len(state_files) == 1
    on_disk = json.loads(Path(state_files[0]).read_text(encoding="utf-8"))
    assert on_disk["checkpoint"]["latest"]["resources"] == deployed.exported.json()["deployment"]["resources"]


def test_the_program_receives_the_config_pulumi_config_shows(deployed: Deployment) -> None:
    """What makes `pulumi config --json` the CLI's reading in test_engine_stack_files.py: the same keys, values and
    secret keys as the engine's Run request to the program, and platform's JSON the same object."""
    run, cli = deployed.program_run, deployed.cli_config
    assert run["dry_run"] is True
    assert run["secret_keys"] == sorted(k for k, v in cli.items() if v["secret"])
    assert set(run["config"]) == set(cli)
    for key, value in run["config"].items():
        if key in run["secret_keys"]:
            continue
        assert value == cli[key]["value"], key
    assert json.loads(run["config"]["gpu-ci:platform"]) == load_stack_config(
        "dev", path=deployed.project.stack_file()
    ).get("platform")


def test_the_first_up_converges_with_the_operator_installed_only_by_the_gpu_pools(deployed: Deployment) -> None:
    """Kapsule installs the GPU operator when a GPU pool is created, not with the cluster: the one `up` meets its
    ClusterPolicy only then, and the program's patch lands on the chart's object (Helm's, then gpu-ci's fields)."""
    assert deployed.up.returncode == 0, deployed.up
    events = [r for r in deployed.up_records if r["method"] == "Kapsule"]
    assert events[0]["event"] == "cluster" and "ciliumnetworkpolicies.cilium.io" in events[0]["installed"]
    installed = {e["pool"]: e["installed"] for e in events if e["event"] == "pool"}
    assert set(installed) == {"system", "ci-compile", "ci-training"}
    (by,) = [pool for pool, names in installed.items() if names]  # one GPU pool's creation installed it
    assert by in {"ci-compile", "ci-training"}
    assert {"clusterpolicies.nvidia.com", "cluster-policy"} <= set(installed[by])
    policy = deployed.plane.get("/apis/nvidia.com/v1/clusterpolicies/cluster-policy")
    managers = {m["manager"] for m in policy["metadata"]["managedFields"]}
    assert {"helm", PATCH_FIELD_MANAGER} <= managers
    assert policy["spec"]["devicePlugin"]["config"]["name"] == "gpu-ci-device-plugin-config"
    assert policy["spec"]["driver"]["enabled"] is True  # the chart's defaults are still there


def test_each_pool_has_its_kwok_nodes_with_the_catalogs_capacity_and_its_sharing_replicas(
    deployed: Deployment,
) -> None:
    nodes = {n["metadata"]["name"]: n for n in deployed.plane.get("/api/v1/nodes")["items"]}
    pools = {n["metadata"]["labels"]["k8s.scaleway.com/pool-name"]: n for n in nodes.values()}
    assert set(pools) == {"system", "ci-compile", "ci-training"}
    gpus = {pool: n["status"]["allocatable"].get("nvidia.com/gpu") for pool, n in pools.items()}
    assert gpus == {"system": None, "ci-compile": "2", "ci-training": "4"}  # time-slicing x2 and x4
    training = pools["ci-training"]
    assert training["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "l40s-1-48g"
    assert {(t["key"], t["effect"]) for t in training["spec"]["taints"]} >= {("nvidia.com/gpu", "NoSchedule")}


IMMUTABLE_CHANGES = {
    "gpu-sharing-config": (("pools", "ci-training", "gpu_sharing", "replicas"), 3, "data"),
    "gpu-sharing-operator-wait-job": (("gpu_operator", "wait_image"), "curlimages/curl:8.12.0", "spec.template"),
}
"""By the object's name: a spec key whose change Pulumi's Kubernetes provider cannot apply in place (a ConfigMap's
data: it replaces one; a Job's pod template: immutable in the API server), its new value, the field named."""


def test_a_change_kubernetes_cannot_apply_in_place_is_a_replacement_in_preview_and_plan_diff(
    deployed: Deployment,
) -> None:
    """The real provider's preview of the deployed stack, the stack file edited (and put back): each object is
    replaced, and the offline plan-diff says so, for the same field."""
    project = deployed.project
    original = project.stack_file().read_text(encoding="utf-8")
    platform = load_stack_config("dev", path=project.stack_file()).get("platform")
    for (section, *keys, last), value, _ in IMMUTABLE_CHANGES.values():
        target = platform[section]
        for key in keys:
            target = target[key]
        target[last] = value
    try:
        project.set_platform(platform)
        preview = project.pulumi("preview", "--diff", "--json", check=False)
        head = load_stack_config("dev", path=project.stack_file())
        offline = diff_plans(deployed.plan, plan_json(head, run_program(head)))
    finally:
        project.stack_file().write_text(original, encoding="utf-8")
    assert preview.returncode == 0, preview
    steps: dict[str, list[dict[str, Any]]] = {}
    for step in preview.json()["steps"]:
        steps.setdefault(step["urn"].rsplit("::", 1)[-1], []).append(step)
    for name, (_, _, field) in IMMUTABLE_CHANGES.items():
        (replace,) = steps[name]
        assert replace["op"] == "replace", (name, replace["op"])
        reasons = replace.get("replaceReasons") or []  # the provider's paths, at or under the field
        assert reasons and all(r == field or r.startswith((f"{field}.", f"{field}[")) for r in reasons), reasons
        (change,) = [r for r in offline.resources if r.name == name]
        assert (change.op, change.replace_reasons) == ("replace", (field,)), name
    replaced = {n for n, found in steps.items() if any(s["op"] == "replace" for s in found)}
    assert replaced == {r.name for r in offline.resources if r.op == "replace"}
