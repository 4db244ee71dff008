"""Safe destroy, safe upgrades, and the bootstrap placeholder, under the real engine.

- `pulumi destroy` (Pulumi's Kubernetes provider on a test cluster of its own) stops at the protected resources
  (the cluster, its network, the pools, the registry), what it removes is gone from the API server, and it leaves
  a state the engine still reads and builds on: the next `up` restores what the destroy removed, and a preview
  after it changes nothing.
- The state the previous landed commit's program wrote (`PREVIOUS_LANDED`, run from `git archive`), previewed by
  today's program, proposes no replacement and no deletion of a protected resource. Both run on the doubles,
  the Kubernetes one included: that program installs the runner chart from GitLab's repository only (it has no
  `runner.chart_repository`), which the build machines cannot reach.
- The dev stack's placeholder `registry_pull_secret_key` (docs/security.md, "Bootstrap: the registry pull key")
  stops `pulumi preview` before any provider is asked anything.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cluster import ControlPlane
from support.deployed import fresh_test_cluster
from support.engine import EngineProject, Result
from support.paths import ROOT

from infra.cloud.gpu_sharing import PATCH_FIELD_MANAGER

PREVIOUS_LANDED = "689e6d2"
"""main's tip when the engine tests were written: the program whose state today's program must take over. Move it to
the previous landed commit when the program changes what it registers."""

SECRETS = {"gitlab:token": "glpat-engine-lifecycle-token", "registry_pull_secret_key": "engine-lifecycle-pull-key"}
PLACEHOLDER_ERROR = (
    "error: Pulumi.dev.yaml: gpu-ci:registry_pull_secret_key='bootstrap-not-done': the stack file's placeholder, "
    "not a key: `pulumi preview` and `up` stop on it until the registry's read-only pull key is made, once, by "
    "someone with IAM rights, "
    'outside CI (docs/security.md, "Bootstrap: the registry pull key"), and set with `pulumi config set --secret '
    "registry_pull_secret_key <its secret part>`"
)
"""What preview says of the placeholder: one line naming the key, why it stops, and the command that replaces it
(the undecryptable `secure:` placeholder before it stopped the CLI with a line that named no key)."""
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PROTECTED_TYPES = {
    "scaleway:network/vpc:Vpc",
    "scaleway:network/privateNetwork:PrivateNetwork",
    "scaleway:kubernetes/cluster:Cluster",
    "scaleway:kubernetes/pool:Pool",
    "scaleway:registry/namespace:Namespace",
}


def _resources(project: EngineProject) -> list[dict[str, Any]]:
    return list(project.pulumi("stack", "export").json()["deployment"]["resources"])


def _consistent(resources: list[dict[str, Any]]) -> list[str]:
    """What in a state points at a resource the state no longer holds (parent, dependency, provider)."""
    urns = {r["urn"] for r in resources}
    providers = {f"{r['urn']}::{r.get('id', '')}" for r in resources if r["type"].startswith("pulumi:providers:")}
    dangling = []
    for r in resources:
        if r.get("parent") and r["parent"] not in urns:
            dangling.append(f"{r['urn']}: parent {r['parent']}")
        dangling += [f"{r['urn']}: depends on {d}" for d in r.get("dependencies", []) if d not in urns]
        if r.get("provider") and r["provider"] not in providers:
            dangling.append(f"{r['urn']}: provider {r['provider']}")
    return dangling


def _live_path(plane: ControlPlane, outputs: dict[str, Any]) -> str:
    """The API server's URL of a Kubernetes resource's object (from its discovery document)."""
    api_version, kind, metadata = outputs["apiVersion"], outputs["kind"], outputs["metadata"]
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    (resource,) = [r for r in plane.get(base)["resources"] if r["kind"] == kind and "/" not in r["name"]]
    namespace = f"/namespaces/{metadata['namespace']}" if resource["namespaced"] else ""
    return f"{base}{namespace}/{resource['name']}/{metadata['name']}"


def _live(plane: ControlPlane, resources: list[dict[str, Any]]) -> dict[str, str]:
    """URN -> the API server's URL of each Kubernetes object of the state that the API server still serves, with
    the uid the state holds: a Helm release by its release Secret, a patch by its fields (the object it patches
    is the operator's: the patch is there while its field manager owns fields of it)."""
    found = {}
    for r in resources:
        outputs = r.get("outputs") or {}
        if r["type"] == HELM_RELEASE:
            status = outputs["status"]
            path = f"/api/v1/namespaces/{status['namespace']}/secrets/sh.helm.release.v1.{status['name']}.v1"
            if plane.request("GET", path).status_code == 200:
                found[r["urn"]] = path
        elif r["type"].endswith("Patch"):
            path = _live_path(plane, outputs)
            live = plane.request("GET", path)
            managers = {m["manager"] for m in live.json()["metadata"].get("managedFields", [])} if live.ok else set()
            if PATCH_FIELD_MANAGER in managers:
                found[r["urn"]] = path
        elif r["type"].startswith("kubernetes:") and "metadata" in outputs:
            path = _live_path(plane, outputs)
            live = plane.request("GET", path)
            if live.status_code == 200 and live.json()["metadata"]["uid"] == outputs["metadata"].get("uid"):
                found[r["urn"]] = path
    return found


@pytest.fixture(scope="module")
def destroyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """On a test cluster of its own (the destroy removes what the shared stack's readers read): `up`, `destroy`,
    and `up` and `preview` again."""
    workdir = tmp_path_factory.mktemp("engine-destroy")
    with fresh_test_cluster(workdir / "cluster") as cluster:
        project = EngineProject(workdir / "engine", cluster=cluster)
        project.init_stack(SECRETS)
        project.pulumi("up", "--yes", "--skip-preview")
        before = _resources(project)
        live_before = _live(cluster.plane, before)
        project.clear_records()
        destroy = project.pulumi("destroy", "--yes", "--skip-preview", check=False)
        after = _resources(project)
        gone = set(live_before) - set(_live(cluster.plane, before))
        deleted = [r["urn"] for r in project.records("Delete")] + sorted(gone)
        up = project.pulumi("up", "--yes", "--skip-preview", check=False)
        again = project.pulumi("preview", "--expect-no-changes", check=False)
        yield {
            "before": before,
            "destroy": destroy,
            "deleted": deleted,
            "after": after,
            "live_before": live_before,
            "gone": gone,
            "up": up,
            "again": again,
        }


def test_destroy_stops_at_the_protected_resources(destroyed: dict[str, Any]) -> None:
    destroy: Result = destroyed["destroy"]
    assert destroy.returncode != 0
    assert "protect" in destroy.output
    protected = {r["urn"] for r in destroyed["before"] if r.get("protect")}
    assert {r["type"] for r in destroyed["before"] if r.get("protect")} == PROTECTED_TYPES
    assert protected <= {r["urn"] for r in destroyed["after"]}
    assert not protected & set(destroyed["deleted"])


def test_what_destroy_removes_is_gone_from_the_api_server_and_the_rest_is_not(destroyed: dict[str, Any]) -> None:
    """Each Kubernetes object the destroy took out of the state is gone from the API server (a Helm release with
    its release Secret), and each one the state keeps is still served."""
    kept = {r["urn"] for r in destroyed["after"]}
    live_before: dict[str, str] = destroyed["live_before"]
    assert len(live_before) >= 15, "the dev stack's Kubernetes objects were on the API server before"
    removed = set(live_before) - kept
    assert removed, "the destroy removed no Kubernetes object"
    assert destroyed["gone"] == removed


def test_destroy_leaves_a_consistent_state_the_next_up_builds_on(destroyed: dict[str, Any]) -> None:
    assert _consistent(destroyed["after"]) == []
    assert destroyed["up"].returncode == 0, destroyed["up"]
    assert destroyed["again"].returncode == 0, destroyed["again"]
    custom = {r["urn"] for r in destroyed["before"] if r["custom"] and not r["type"].startswith("pulumi:providers:")}
    kept = {r["urn"] for r in destroyed["after"]}
    assert custom == (custom & kept) | set(destroyed["deleted"])  # each resource kept, or deleted by its provider
    assert not custom & kept & set(destroyed["deleted"])


def _previous_program(dest: Path) -> Path:
    """The previous landed commit's files, as `git archive` has them (a clean clone's history holds the commit)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", PREVIOUS_LANDED],
            capture_output=True,
            check=True,
        ).stdout
    except subprocess.CalledProcessError as err:
        pytest.fail(
            f"git archive {PREVIOUS_LANDED}: {err.stderr.decode(errors='replace').strip()} (a full clone is needed)"
        )
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("engine-upgrade")
    old = EngineProject(workdir, source=_previous_program(tmp_path_factory.mktemp("previous")))
    old.init_stack(SECRETS)
    old.pulumi("up", "--yes", "--skip-preview")
    state = _resources(old)
    salt = yaml.safe_load(old.stack_file().read_text(encoding="utf-8"))["encryptionsalt"]
    new = EngineProject(tmp_path_factory.mktemp("engine-upgrade-today"))
    new.state.rmdir()
    new.state.symlink_to(old.state)  # the same backend: today's program previews the old program's state
    new.stack_file().write_text(
        f"encryptionsalt: {salt}\n" + new.stack_file().read_text(encoding="utf-8"), encoding="utf-8"
    )
    for key, value in SECRETS.items():
        new.pulumi("config", "set", "--secret", key, "--stack", "dev", stdin=value)
    new.pulumi("stack", "select", "dev")
    preview = new.pulumi("preview", "--json", "--diff", check=False)
    return {"state": state, "preview": preview}


def test_todays_program_takes_over_the_previous_commits_state_without_replacing_or_deleting(
    upgraded: dict[str, Any],
) -> None:
    preview: Result = upgraded["preview"]
    assert preview.returncode == 0, preview
    protected = {r["urn"] for r in upgraded["state"] if r.get("protect")}
    assert protected
    steps = preview.json()["steps"]
    replaced = [s["urn"] for s in steps if s["op"] in {"replace", "create-replacement", "delete-replaced"}]
    assert replaced == []
    assert [s["urn"] for s in steps if s["op"] == "delete" and s["urn"] in protected] == []


def test_the_placeholder_registry_key_stops_preview_before_any_provider(tmp_path: Path) -> None:
    project = EngineProject(tmp_path)
    project.init_stack({"gitlab:token": SECRETS["gitlab:token"]})  # the bootstrap step not done: placeholder kept
    assert "gpu-ci:registry_pull_secret_key: bootstrap-not-done\n" in project.stack_file().read_text()
    preview = project.pulumi("preview", check=False)
    assert preview.returncode != 0
    diagnostics = preview.stdout.partition("\nDiagnostics:\n")[2].partition("\nResources:\n")[0]
    errors = [line.strip() for line in diagnostics.splitlines() if line.strip().startswith("error:")]
    # the second: the SDK's inline runtime (tests/support/doubles/language_host.py) restating the program's error
    assert errors == [PLACEHOLDER_ERROR, PLACEHOLDER_ERROR.replace("error: ", "error: an unhandled error occurred: ")]
    assert "validating stack config" not in preview.output, preview
    assert [r for r in project.records() if r["method"] in {"Check", "Create", "Invoke"}] == []
