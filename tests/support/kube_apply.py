"""The platform's Kubernetes objects as a plan document (`plan --json`) describes them, for the engine tests'
checks of Pod Security, RBAC and the scheduler (tests/engine/test_cluster_checks.py), which read them from the
plan of the stack file the engine deployed and ask the API server about them.

The objects are the `kubernetes:` resources of the plan: each one's inputs are the object the Kubernetes
provider sends (apiVersion, kind, metadata, spec, rules...). Three kinds are not plain objects and are stood
in for or left out, saying so:
- `helm.sh/v3:Release` (a gitlab-runner release): what its chart makes of its values for RBAC, the
  ServiceAccount, the Role and the RoleBinding, as the chart's templates render them (gitlab-runner 0.86.0,
  `templates/service-account.yaml`, `role.yaml`, `role-binding.yaml`: every one named after the release,
  which starts with the chart's name, in the release's namespace; a rule's missing `apiGroups` is `[""]`,
  missing `resources` and `verbs` are `["*"]`, and no rule at all is `*` on the core group): the checks find
  each on the API server, where the real chart put it. The manager's Deployment is not: its pod is the
  chart's, not the platform's design, and its config is read from the values instead (`runner_config`).
- `nvidia.com/v1:ClusterPolicyPatch`: a patch of an object the GPU operator owns, not an object of its own.
- `cilium.io/v2:*`: Cilium's policies, whose CRDs the Kapsule double installs; a NetworkPolicy is not
  enforced by the test cluster (no CNI), so none of the checks reads them.
- a Secret whose data the plan redacts (`[secret]`: the plan never shows a secret): given a stand-in value
  (`{}` for a `.dockerconfigjson`), so that the body is still an object of its kind.

`Applier` creates what the checks add (pods, Jobs, dry runs) at the API server's own resource paths.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from support.cluster import ControlPlane

PREFIX = "kubernetes:"
LEFT_OUT = ("nvidia.com/v1:ClusterPolicyPatch", "cilium.io/v2:")
"""Types the applier does not create (see the module's docstring)."""
RELEASE = "helm.sh/v3:Release"
REDACTED = "[secret]"
"""What the plan shows for a secret input."""
DOCKER_CONFIG_TYPE = "kubernetes.io/dockerconfigjson"
DOCKER_CONFIG = ".dockerconfigjson"
CHART = "gitlab-runner"


@dataclass(frozen=True)
class Release:
    """A gitlab-runner release of the plan: its name, namespace and values."""

    name: str
    namespace: str
    values: Mapping[str, Any]

    @property
    def fullname(self) -> str:
        """The chart's `gitlab-runner.fullname`: the release's name when it starts with the chart's."""
        return self.name if self.name.startswith(CHART) else f"{self.name}-{CHART}"

    @property
    def service_account(self) -> str:
        return self.fullname

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The Role's rules as the chart's role.yaml renders them."""
        rules = self.values.get("rbac", {}).get("rules") or []
        if not rules:
            return [{"apiGroups": [""], "resources": ["*"], "verbs": ["*"]}]
        return [
            {
                "apiGroups": rule.get("apiGroups") or [""],
                "resources": rule.get("resources") or ["*"],
                "verbs": rule.get("verbs") or ["*"],
            }
            for rule in rules
        ]

    def runner_config(self) -> dict[str, Any]:
        """The config.toml template the release's manager registers with (`runners.config`)."""
        return tomllib.loads(self.values["runners"]["config"])

    def objects(self) -> list[dict[str, Any]]:
        """The chart's ServiceAccount, Role and RoleBinding for these values (`rbac.create`, not cluster-wide)."""
        if not self.values.get("rbac", {}).get("create") or self.values["rbac"].get("clusterWideAccess"):
            raise ValueError(f"release {self.name}: only a namespaced Role is rendered here")
        meta = {"name": self.fullname, "namespace": self.namespace, "labels": {"app": self.fullname}}
        return [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": self.rules},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": self.fullname},
                "subjects": [{"kind": "ServiceAccount", "name": self.service_account, "namespace": self.namespace}],
            },
        ]


def releases(plan: Mapping[str, Any]) -> list[Release]:
    """The plan's gitlab-runner releases."""
    return [
        Release(r["inputs"]["name"], r["inputs"]["namespace"], r["inputs"]["values"])
        for r in plan["resources"]
        if r["type"] == PREFIX + RELEASE
    ]


def objects(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Kubernetes objects the plan's resources are, in the plan's order."""
    found: list[dict[str, Any]] = []
    for resource in plan["resources"]:
        kind = resource["type"]
        if not kind.startswith(PREFIX) or kind.startswith("pulumi:"):
            continue
        token = kind.removeprefix(PREFIX)
        if token == RELEASE or token.startswith(LEFT_OUT):
            continue
        body = dict(resource["inputs"])
        if body.get("stringData") == REDACTED:
            body["stringData"] = {DOCKER_CONFIG: "{}"} if body.get("type") == DOCKER_CONFIG_TYPE else {}
        if body.get("kind") != token.rsplit(":", 1)[1]:
            raise ValueError(f"{resource['urn']}: inputs of kind {body.get('kind')!r}, type {kind}")
        found.append(body)
    for release in releases(plan):
        found += release.objects()
    return found


def of_kind(plan: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [body for body in objects(plan) if body["kind"] == kind]


class Applier:
    """Creates objects on a control plane, and names their paths, by the API server's own discovery."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    def path(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of `kind`'s collection (or of the object `name`), namespaced when the kind is."""
        plural, namespaced = self._discover(api_version)[kind]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        where = f"/namespaces/{namespace}" if namespaced and namespace else ""
        return f"{base}{where}/{plural}" + (f"/{name}" if name else "")

    def object_path(self, body: Mapping[str, Any]) -> str:
        meta = body["metadata"]
        return self.path(body["apiVersion"], body["kind"], meta.get("namespace"), meta["name"])

    def create(self, body: Mapping[str, Any], *, dry_run: bool = False) -> Any:
        """POSTs `body`; returns the API server's answer (any status)."""
        meta = body["metadata"]
        path = self.path(body["apiVersion"], body["kind"], meta.get("namespace"))
        return self.plane.request("POST", path + ("?dryRun=All" if dry_run else ""), dict(body))

    def _discover(self, api_version: str) -> dict[str, tuple[str, bool]]:
        if api_version not in self._resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listed = self.plane.get(base)["resources"]
            self._resources[api_version] = {
                r["kind"]: (r["name"], r["namespaced"]) for r in listed if "/" not in r["name"]
            }
        return self._resources[api_version]
