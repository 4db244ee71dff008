"""Recording Pulumi mocks: every resource type the program may register, with realistic outputs.

Each type the program uses is listed in `RESOURCE_TYPES` with the outputs the real provider would add
(camelCase, the wire names) and the inputs worth showing in the plan table. An unregistered type or an
unanswered invoke raises: a mock that accepts anything lets a wrong token pass unnoticed.

The monitor records what the engine would receive for each registration: inputs (secrets still wrapped,
so tests can tell a secret from a plain value) and resource options (protect, ignore_changes,
delete_before_replace, dependencies, import id), which `Mocks.new_resource` alone never sees.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings

from infra.cloud.names import COMPONENT_PREFIX, T

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"

OutputsFn = Callable[[pulumi_mocks.MockResourceArgs, str], dict[str, Any]]

MOCK_KUBECONFIG_PREFIX = "apiVersion: v1\nkind: Config\n# mock kubeconfig of "
"""Kubeconfigs handed out by the mocks start with this; the secrets audit looks for it."""


@dataclass(frozen=True)
class ResourceType:
    """What the mocks know about one resource type token."""

    key_inputs: tuple[str, ...] = ()
    """Inputs (camelCase) shown in the plan's resource table."""
    outputs: OutputsFn | None = None
    """Extra outputs the provider computes, given the args and the resource id."""


def _cluster_outputs(args: pulumi_mocks.MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = args.inputs.get("name") or args.name
    region = resource_id.split("/", maxsplit=1)[0]
    host = f"https://{resource_id.rsplit('/', maxsplit=1)[-1]}.api.k8s.{region}.scw.cloud:6443"
    return {
        "kubeconfigs": [
            {
                "configFile": f"{MOCK_KUBECONFIG_PREFIX}{name}\nclusters: [{{cluster: {{server: {host}}}}}]\n",
                "host": host,
                "token": f"mock-admin-token-{name}",
                "clusterCaCertificate": "bW9jay1jYQ==",
            }
        ],
        "apiserverUrl": host,
        "status": "ready",
        "wildcardDns": f"*.{resource_id.rsplit('/', maxsplit=1)[-1]}.nodes.k8s.{region}.scw.cloud",
    }


def _pool_outputs(args: pulumi_mocks.MockResourceArgs, _id: str) -> dict[str, Any]:
    return {"status": "ready", "currentSize": args.inputs.get("size", 0), "nodes": []}


def _k8s_object_outputs(args: pulumi_mocks.MockResourceArgs, resource_id: str) -> dict[str, Any]:
    """What the API server adds to an object's metadata: uid, resourceVersion, creationTimestamp."""
    metadata = dict(args.inputs.get("metadata") or {})
    metadata.update(uid=resource_id, resourceVersion="1", creationTimestamp="2026-11-29T00:00:00Z")
    return {"metadata": metadata}


MOCK_RUNNER_TOKEN_PREFIX = "glrt-mock-"
"""Runner tokens handed out by the mocks start with this; the secrets audit looks for it."""
MOCK_PROJECT_ID = 4242
MOCK_GROUP_ID = 42


def _stable(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "::".join(parts)))


def _user_runner_outputs(args: pulumi_mocks.MockResourceArgs, _id: str) -> dict[str, Any]:
    return {"token": MOCK_RUNNER_TOKEN_PREFIX + _stable("token", args.name).replace("-", "")[:20]}


def _registry_namespace_outputs(args: pulumi_mocks.MockResourceArgs, resource_id: str) -> dict[str, Any]:
    region = resource_id.split("/", maxsplit=1)[0]
    return {
        "endpoint": f"rg.{region}.scw.cloud/{args.inputs.get('name') or args.name}",
        "projectId": _stable("project", "default"),
        "organizationId": _stable("organization", "default"),
    }


def _api_key_outputs(args: pulumi_mocks.MockResourceArgs, _id: str) -> dict[str, Any]:
    return {
        "accessKey": "SCW" + _stable("ak", args.name).replace("-", "")[:17].upper(),
        "secretKey": _stable("sk", args.name),
    }


def _bucket_outputs(args: pulumi_mocks.MockResourceArgs, resource_id: str) -> dict[str, Any]:
    region = resource_id.split("/", maxsplit=1)[0]
    name = args.inputs.get("name") or args.name
    return {"endpoint": f"https://{name}.s3.{region}.scw.cloud", "apiEndpoint": f"https://s3.{region}.scw.cloud"}


def _release_outputs(args: pulumi_mocks.MockResourceArgs, _id: str) -> dict[str, Any]:
    return {
        "status": {
            "status": "deployed",
            "name": args.inputs.get("name"),
            "namespace": args.inputs.get("namespace"),
            "chart": args.inputs.get("chart"),
            "version": args.inputs.get("version"),
            "revision": 1,
        }
    }


def _repository_file_outputs(args: pulumi_mocks.MockResourceArgs, _id: str) -> dict[str, Any]:
    commit = _stable("commit", args.name, str(args.inputs.get("content"))).replace("-", "")
    return {"commitId": commit, "lastCommitId": commit, "ref": args.inputs.get("branch")}


RESOURCE_TYPES: dict[str, ResourceType] = {
    T.VPC: ResourceType(("name", "region")),
    T.PRIVATE_NETWORK: ResourceType(("name", "region", "ipv4Subnet")),
    T.CLUSTER: ResourceType(
        ("name", "type", "version", "cni", "region", "autoscalerConfig", "autoUpgrade"), _cluster_outputs
    ),
    T.POOL: ResourceType(
        (
            "name",
            "nodeType",
            "zone",
            "size",
            "minSize",
            "maxSize",
            "autoscaling",
            "rootVolumeSizeInGb",
            "labels",
            "taints",
            "upgradePolicy",
        ),
        _pool_outputs,
    ),
    T.K8S_PROVIDER: ResourceType(("kubeconfig",)),
    T.CONFIG_MAP: ResourceType(("metadata", "data"), _k8s_object_outputs),
    T.CLUSTER_POLICY_PATCH: ResourceType(("metadata", "spec"), _k8s_object_outputs),
    T.REGISTRY_NAMESPACE: ResourceType(("name", "region", "isPublic"), _registry_namespace_outputs),
    T.IAM_APPLICATION: ResourceType(("name",)),
    T.IAM_POLICY: ResourceType(("name", "rules")),
    T.IAM_API_KEY: ResourceType(("description",), _api_key_outputs),
    T.BUCKET: ResourceType(("name", "region", "lifecycleRules"), _bucket_outputs),
    T.USER_RUNNER: ResourceType(
        ("runnerType", "projectId", "groupId", "tagLists", "untagged", "accessLevel", "maximumTimeout"),
        _user_runner_outputs,
    ),
    T.REPOSITORY_FILE: ResourceType(("project", "filePath", "branch"), _repository_file_outputs),
    T.PROJECT_VARIABLE: ResourceType(("project", "key", "value", "masked", "protected")),
    T.GROUP_VARIABLE: ResourceType(("group", "key", "value", "masked", "protected")),
    T.NAMESPACE: ResourceType(("metadata",), _k8s_object_outputs),
    T.SECRET: ResourceType(("metadata", "type", "stringData"), _k8s_object_outputs),
    T.NETWORK_POLICY: ResourceType(("metadata", "spec"), _k8s_object_outputs),
    T.CILIUM_NETWORK_POLICY: ResourceType(("metadata", "spec"), _k8s_object_outputs),
    T.HELM_RELEASE: ResourceType(("name", "chart", "version", "namespace", "repositoryOpts"), _release_outputs),
    T.PRIORITY_CLASS: ResourceType(("metadata", "value"), _k8s_object_outputs),
    T.DEPLOYMENT: ResourceType(("metadata", "spec"), _k8s_object_outputs),
    T.CRON_JOB: ResourceType(("metadata", "spec"), _k8s_object_outputs),
    T.SERVICE_ACCOUNT: ResourceType(("metadata",), _k8s_object_outputs),
    T.ROLE: ResourceType(("metadata", "rules"), _k8s_object_outputs),
    T.ROLE_BINDING: ResourceType(("metadata", "roleRef", "subjects"), _k8s_object_outputs),
    T.CLUSTER_ROLE: ResourceType(("metadata", "rules"), _k8s_object_outputs),
    T.CLUSTER_ROLE_BINDING: ResourceType(("metadata", "roleRef", "subjects"), _k8s_object_outputs),
    T.JOB: ResourceType(("metadata", "spec"), _k8s_object_outputs),
}
"""What the mocks know of each provider resource type (`infra.cloud.names.T`); the components need none."""


InvokeFn = Callable[[dict[str, Any]], dict[str, Any]]


def _get_project(args: dict[str, Any]) -> dict[str, Any]:
    path = args.get("pathWithNamespace") or "mock/project"
    return {
        "id": str(MOCK_PROJECT_ID),
        "pathWithNamespace": path,
        "path": path.rsplit("/", maxsplit=1)[-1],
        "defaultBranch": "main",
        "webUrl": f"https://gitlab.example/{path}",
    }


def _get_group(args: dict[str, Any]) -> dict[str, Any]:
    path = args.get("fullPath") or "mock"
    return {
        "id": str(MOCK_GROUP_ID),
        "groupId": MOCK_GROUP_ID,
        "fullPath": path,
        "webUrl": f"https://gitlab.example/{path}",
    }


def _get_registry_namespace(args: dict[str, Any]) -> dict[str, Any]:
    region, name = args.get("region") or "fr-par", args.get("name") or "mock"
    return {
        "id": f"{region}/{_stable('registry', name)}",
        "namespaceId": f"{region}/{_stable('registry', name)}",
        "name": name,
        "region": region,
        "endpoint": f"rg.{region}.scw.cloud/{name}",
        "projectId": _stable("project", "default"),
        "isPublic": False,
    }


INVOKES: dict[str, InvokeFn] = {
    "gitlab:index/getProject:getProject": _get_project,
    "gitlab:index/getGroup:getGroup": _get_group,
    "scaleway:registry/getNamespace:getNamespace": _get_registry_namespace,
}
"""Answers for the invokes (data sources) the program calls, by token."""


@dataclass
class RecordedResource:
    """One registration as the engine would receive it."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    """As sent: secret values are still wrapped (see `is_secret`)."""
    options: dict[str, Any]
    id: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def plain_inputs(self) -> dict[str, Any]:
        """Inputs with secrets unwrapped, for asserting on values."""
        return unwrap_secrets(self.inputs)


def is_secret(value: Any) -> bool:
    return rpc.is_rpc_secret(value)


def unwrap_secrets(value: Any) -> Any:
    if rpc.is_rpc_secret(value):
        return unwrap_secrets(value["value"])
    if isinstance(value, dict):
        return {k: unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(v) for v in value]
    return value


def mask_secrets(value: Any, mask: str = "[secret]") -> Any:
    """The value with every secret replaced by `mask`: what may be shown or written."""
    if rpc.is_rpc_secret(value):
        return mask
    if isinstance(value, dict):
        return {k: mask_secrets(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v, mask) for v in value]
    return value


def mock_id(type_token: str, name: str, region: str = "fr-par") -> str:
    """Deterministic ids shaped like the provider's (`fr-par/<uuid>` for Scaleway), stable across runs."""
    stable = uuid.uuid5(uuid.NAMESPACE_URL, f"{type_token}::{name}")
    if type_token == T.USER_RUNNER:
        return str(stable.int % 10**6)  # GitLab runner ids are integers
    return f"{region}/{stable}" if type_token.startswith("scaleway:") else str(stable)


class RecordingMocks(pulumi_mocks.Mocks):
    """Answers registrations and invokes from the tables above; raises on anything unknown."""

    def __init__(self, region: str = "fr-par") -> None:
        self.region = region
        self.invokes: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ.startswith(COMPONENT_PREFIX) and not args.custom:
            return None, {}
        kind = RESOURCE_TYPES.get(args.typ)
        if kind is None:
            raise NotImplementedError(f"mocks: unknown resource type {args.typ!r}; add it to RESOURCE_TYPES")
        region = str(unwrap_secrets(args.inputs.get("region")) or self.region)
        resource_id = args.resource_id or mock_id(args.typ, args.name, region)
        outputs = kind.outputs(args, resource_id) if kind.outputs else {}
        return resource_id, {**args.inputs, **outputs}

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        answer = INVOKES.get(args.token)
        if answer is None:
            raise NotImplementedError(f"mocks: unknown invoke {args.token!r}; add it to INVOKES")
        self.invokes.append((args.token, dict(args.args)))
        return answer(dict(args.args)), []  # no check failures (None would break MockMonitor.Invoke)


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that keeps each registration's inputs and options, in order."""

    mocks: RecordingMocks

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN as the engine makes it (`urn.New`): the parent's whole type chain before the type, except the
        root stack's. (The SDK's MockMonitor writes `pulumi:pulumi:Stack$` into every top-level resource's URN
        and only the last type of a deeper parent's chain: URNs the real state never has.)"""
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != ROOT_STACK_TYPE:
                type_ = f"{parent_type}${type_}"
        return "urn:pulumi:" + "::".join([settings.get_stack(), settings.get_project(), type_, name])

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self._record(
                request,
                response.urn,
                custom=request.custom,
                inputs=rpc.deserialize_properties(request.object),
                options={
                    "protect": request.protect,
                    "ignore_changes": list(request.ignoreChanges),
                    "delete_before_replace": request.deleteBeforeReplace,
                    "import_id": request.importId,
                    "read": False,
                    "custom_timeouts": {
                        phase: getattr(request.customTimeouts, phase) for phase in ("create", "update", "delete")
                    },
                },
            )
        return response

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """`Resource.get(...)`: the engine reads an existing resource by id (adopted clusters, registries)."""
        response = super().ReadResource(request)
        self._record(
            request,
            response.urn,
            custom=True,
            inputs=rpc.deserialize_properties(request.properties),
            options={
                "protect": False,
                "ignore_changes": [],
                "delete_before_replace": False,
                "import_id": "",
                "read": True,
                "id": request.id,
            },
        )
        return response

    def _record(self, request: Any, urn: str, *, custom: bool, inputs: dict[str, Any], options: dict[str, Any]) -> None:
        registration = self.resources.get(urn)
        self.recorded.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=urn,
                parent=request.parent,
                custom=custom,
                inputs=inputs,
                options={
                    **options,
                    "dependencies": sorted(request.dependencies),
                    "provider": request.provider,
                    "additional_secret_outputs": list(request.additionalSecretOutputs),
                },
                id=options.get("id") or (registration.id if registration else None),
                outputs=registration.state if registration else {},
            )
        )
