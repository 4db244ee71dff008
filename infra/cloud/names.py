"""Logical names and type tokens shared by the components and the offline tools (no Pulumi import).

Pulumi names become URNs; a rename is a delete and a create. They are built from spec keys only.
"""

COMPONENT_NAME = "kapsule"
KAPSULE_TOKEN = "gpu-ci:infra:KapsuleCluster"


def child_name(suffix: str, component: str = COMPONENT_NAME) -> str:
    """`kapsule-cluster`, `kapsule-ci-compile`: a child's name under its component."""
    return f"{component}-{suffix}"


GPU_SHARING_NAME = "gpu-sharing"
GPU_SHARING_TOKEN = "gpu-ci:infra:GpuSharing"
REGISTRY_COMPONENT = "registry"
REGISTRY_TOKEN = "gpu-ci:infra:ContainerRegistry"
RUNNER_COMPONENT = "runner"
RUNNER_TOKEN = "gpu-ci:infra:GitlabRunner"
CI_COMPONENT = "gitlab-ci"
CI_TOKEN = "gpu-ci:infra:GitlabCi"
