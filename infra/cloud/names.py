"""Logical names, type tokens and labels shared by the components, the mocks and the offline tools.

No Pulumi import: the offline plan, the mocks and the tests read these without loading the providers.
Pulumi names become URNs; a rename is a delete and a create. They are built from spec keys only.
"""

from __future__ import annotations

from enum import StrEnum


class T(StrEnum):
    """Every resource type token the program registers: components (ours) and provider resources."""

    KAPSULE = "gpu-ci:infra:KapsuleCluster"
    GPU_SHARING = "gpu-ci:infra:GpuSharing"
    REGISTRY = "gpu-ci:infra:ContainerRegistry"
    RUNNERS = "gpu-ci:infra:GitlabRunner"
    """The runner fleet: the token of the single-runner days, kept so existing URNs stay (see cloud/runner.py)."""
    GITLAB_CI = "gpu-ci:infra:GitlabCi"
    WARM = "gpu-ci:infra:WarmCapacity"
    VPC = "scaleway:network/vpc:Vpc"
    PRIVATE_NETWORK = "scaleway:network/privateNetwork:PrivateNetwork"
    CLUSTER = "scaleway:kubernetes/cluster:Cluster"
    POOL = "scaleway:kubernetes/pool:Pool"
    K8S_PROVIDER = "pulumi:providers:kubernetes"
    CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
    CLUSTER_POLICY_PATCH = "kubernetes:nvidia.com/v1:ClusterPolicyPatch"
    REGISTRY_NAMESPACE = "scaleway:registry/namespace:Namespace"
    IAM_APPLICATION = "scaleway:iam/application:Application"
    IAM_POLICY = "scaleway:iam/policy:Policy"
    IAM_API_KEY = "scaleway:iam/apiKey:ApiKey"
    BUCKET = "scaleway:object/bucket:Bucket"
    USER_RUNNER = "gitlab:index/userRunner:UserRunner"
    REPOSITORY_FILE = "gitlab:index/repositoryFile:RepositoryFile"
    PROJECT_VARIABLE = "gitlab:index/projectVariable:ProjectVariable"
    GROUP_VARIABLE = "gitlab:index/groupVariable:GroupVariable"
    NAMESPACE = "kubernetes:core/v1:Namespace"
    SECRET = "kubernetes:core/v1:Secret"
    NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
    CILIUM_NETWORK_POLICY = "kubernetes:cilium.io/v2:CiliumNetworkPolicy"
    HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
    PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
    DEPLOYMENT = "kubernetes:apps/v1:Deployment"
    CRON_JOB = "kubernetes:batch/v1:CronJob"
    SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
    ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
    ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
    CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
    JOB = "kubernetes:batch/v1:Job"


COMPONENT_PREFIX = "gpu-ci:infra:"
"""Our own ComponentResources: registered like resources, with no provider behind them."""

COMPONENT_NAME = "kapsule"
KAPSULE_TOKEN = T.KAPSULE.value
GPU_SHARING_NAME = "gpu-sharing"
GPU_SHARING_TOKEN = T.GPU_SHARING.value
REGISTRY_COMPONENT = "registry"
REGISTRY_TOKEN = T.REGISTRY.value
RUNNER_COMPONENT = "runner"
RUNNER_TOKEN = T.RUNNERS.value
CI_COMPONENT = "gitlab-ci"
CI_TOKEN = T.GITLAB_CI.value
WARM_COMPONENT = "warm"
WARM_TOKEN = T.WARM.value

MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "gpu-ci"}
"""Labels on every Kubernetes object gpu-ci creates."""


def child_name(suffix: str, component: str = COMPONENT_NAME) -> str:
    """`kapsule-cluster`, `kapsule-ci-compile`: a child's name under its component."""
    return f"{component}-{suffix}"
