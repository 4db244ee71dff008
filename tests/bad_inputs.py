"""The bad-input corpus: invalid stack configs, each with the one line it must fail with.

Used three ways: `load_spec` raises exactly that line (test_spec.py, test_spec_integration.py), and the
whole program stops with it before registering any resource (test_bad_input_corpus.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Edit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Bad:
    id: str
    edit: Edit
    line: str
    """The whole expected error line."""


def set_(*path: str, value: Any) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return edit


def drop(*path: str) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


SPEC_CASES = [
    Bad(
        "no-profiles",
        set_("profiles", value={}),
        "platform.profiles={}: no profile: the runner routes jobs by profile, give at least one",
    ),
    Bad(
        "typo-node-type",
        set_("pools", "ci-compile", "node_type", value="L4-1-24GB"),
        "platform.pools.ci-compile.node_type='L4-1-24GB': unknown node type; did you mean 'L4-1-24G'? "
        "(add it under platform.node_types)",
    ),
    Bad(
        "malformed-cpu",
        set_("profiles", "rl", "cpu_request", value="3 cores"),
        "platform.profiles.rl.cpu_request='3 cores': not a Kubernetes CPU quantity",
    ),
    Bad(
        "millibytes",
        set_("profiles", "rl", "memory_request", value="8m"),
        "platform.profiles.rl.memory_request='8m': suffix 'm' means 1/1000 of a byte here; did you mean Mi or M?",
    ),
    Bad(
        "request-bigger-than-node",
        lambda p: p["profiles"]["supervised"].update(memory_request="100Gi", memory_limit="100Gi"),
        "platform.profiles.supervised.memory_request='100Gi': is larger than one L40S-1-48G node's allocatable 92 GiB",
    ),
    Bad(
        "requests-times-jobs-overflow",
        set_("profiles", "rl", "cpu_request", value="3600m"),
        "platform.profiles.rl.cpu_request='3600m': x 2 jobs per node = 7200m exceeds one L4-1-24G node's "
        "allocatable 7000m; lower it or the pool's replicas",
    ),
    Bad(
        "min-above-max",
        set_("pools", "ci-training", "min_size", value=2),
        "platform.pools.ci-training.min_size=2: is above max_size=1",
    ),
    Bad(
        "unknown-pool",
        set_("profiles", "supervised", "pool", value="ci-trainig"),
        "platform.profiles.supervised.pool='ci-trainig': no such pool (pools: ci-compile, ci-training, system)",
    ),
    Bad(
        "profile-without-pool",
        drop("profiles", "rl", "pool"),
        "platform.profiles.rl.pool=<missing>: required key is missing",
    ),
    Bad(
        "typo-key",
        set_("pools", "ci-compile", "max_sise", value=2),
        "platform.pools.ci-compile.max_sise=2: unknown key (allowed: autohealing, autoscaling, cold_start_minutes, "
        "gpu_sharing, labels, max_size, min_size, node_type, root_volume_size_gb, root_volume_type, zone)",
    ),
    Bad(
        "negative-size",
        set_("pools", "ci-compile", "max_size", value=-1),
        "platform.pools.ci-compile.max_size=-1: Input should be greater than or equal to 0",
    ),
    Bad(
        "limit-below-request",
        set_("profiles", "rl", "memory_limit", value="4Gi"),
        "platform.profiles.rl.memory_limit='4Gi': is below memory_request=8Gi",
    ),
    Bad(
        "l40s-in-wrong-zone",
        set_("pools", "ci-training", "zone", value="fr-par-1"),
        "platform.pools.ci-training.zone='fr-par-1': L40S-1-48G is not sold there (zones: fr-par-2, pl-waw-2)",
    ),
    Bad(
        "zone-outside-region",
        set_("pools", "ci-compile", "zone", value="nl-ams-1"),
        "platform.pools.ci-compile.zone='nl-ams-1': is not a zone of the region 'fr-par'",
    ),
    Bad(
        "sharing-with-one-replica",
        set_("pools", "ci-compile", "gpu_sharing", "replicas", value=1),
        "platform.pools.ci-compile.gpu_sharing.replicas=1: time-slicing needs >= 2 replicas "
        "(use strategy 'none' for one job per GPU)",
    ),
    Bad(
        "sharing-with-zero-replicas",
        set_("pools", "ci-training", "gpu_sharing", value={"strategy": "mps", "replicas": 0}),
        "platform.pools.ci-training.gpu_sharing.replicas=0: mps needs >= 2 replicas "
        "(use strategy 'none' for one job per GPU)",
    ),
    Bad(
        "sharing-on-cpu-pool",
        set_("pools", "system", "gpu_sharing", value={"strategy": "mps", "replicas": 2}),
        "platform.pools.system.gpu_sharing.strategy='mps': PRO2-XXS has no GPU to share",
    ),
    Bad(
        "duplicate-template",
        set_("profiles", "supervised", "template", value=".train-rl-base"),
        "platform.profiles.supervised.template='.train-rl-base': already used by profile 'rl'",
    ),
    Bad(
        "family-routed-twice",
        set_("profiles", "supervised", "families", value=["tft", "ppo"]),
        "platform.profiles.supervised.families='ppo': already routed by profile 'rl'",
    ),
    Bad(
        "profile-on-cpu-pool",
        set_("profiles", "rl", "pool", value="system"),
        "platform.profiles.rl.pool='system': is not a GPU pool (PRO2-XXS); every CI job requests one nvidia.com/gpu",
    ),
    Bad(
        "fixed-pool-with-range",
        set_("pools", "system", "max_size", value=3),
        "platform.pools.system.max_size=3: a pool without autoscaling has a fixed size: set it equal to min_size=1",
    ),
    Bad(
        "no-always-on-pool",
        lambda p: p["pools"]["system"].update(min_size=0, autoscaling=True),
        "platform.pools=['ci-compile', 'ci-training', 'system']: no pool has min_size >= 1: a mutualized Kapsule "
        "cluster needs an always-on pool (runner manager, kube-system)",
    ),
    Bad(
        "pool-name-breaks-regex",
        set_("pools", "ci.gpu|x", value={"node_type": "L4-1-24G", "zone": "fr-par-2"}),
        "platform.pools.ci.gpu|x='ci.gpu|x': pool name must be 1-63 of a-z, 0-9 and '-' (it is a label value and "
        "part of the runner's node-selector regex)",
    ),
    Bad(
        "cuda-volume-too-small",
        set_("pools", "ci-training", "root_volume_size_gb", value=40),
        "platform.pools.ci-training.root_volume_size_gb=40: must be >= 100 GB (CUDA images need room)",
    ),
    Bad(
        "reserved-label",
        set_("pools", "ci-compile", "labels", value={"k8s.scaleway.com/pool-name": "ci-training"}),
        "platform.pools.ci-compile.labels.k8s.scaleway.com/pool-name='ci-training': prefix reserved: "
        "k8s.scaleway.com/pool-name is set by Kapsule, nvidia.com/ labels by gpu-ci",
    ),
    Bad(
        "bad-version",
        set_("cluster", "version", value="latest"),
        "platform.cluster.version='latest': not a Kubernetes version like 1.35 or 1.35.3",
    ),
    Bad(
        "patch-version-with-auto-upgrade",
        set_("cluster", "version", value="1.35.3"),
        "platform.cluster.version='1.35.3': auto_upgrade needs a minor version (e.g. 1.35): patches are applied "
        "by Scaleway",
    ),
    Bad(
        "bad-existing-id",
        set_("cluster", "existing_id", value="my-cluster"),
        "platform.cluster.existing_id='my-cluster': not a Kapsule cluster id like "
        "fr-par/11111111-2222-3333-4444-555555555555",
    ),
    Bad(
        "bad-duration",
        set_("cluster", "autoscaler", "scale_down_unneeded_time", value="five minutes"),
        "platform.cluster.autoscaler.scale_down_unneeded_time='five minutes': not a duration like 5m, 300s or 1h",
    ),
    Bad(
        "template-not-hidden",
        set_("profiles", "rl", "template", value="train-rl-base"),
        "platform.profiles.rl.template='train-rl-base': a hidden GitLab CI job name starts with '.', then a-z, "
        "0-9, '-' or '_' (at most 255)",
    ),
    Bad(
        "new-node-type-without-figures",
        set_("node_types", "X1-1", value={"eur_per_hour": "1"}),
        "platform.node_types.X1-1='X1-1': not a built-in node type, so it must state vcpus, memory_gib, gpus",
    ),
    # GPU sharing, the GPU operator and the workload (issue 4)
    Bad(
        "replicas-times-memory-requests-overflow",
        set_("pools", "ci-training", "gpu_sharing", "replicas", value=6),
        "platform.profiles.supervised.memory_request='16Gi': x 6 jobs per node = 96 GiB exceeds one L40S-1-48G "
        "node's allocatable 92 GiB; lower it or the pool's replicas",
    ),
    Bad(
        "vram-need-above-mps-share",
        lambda p: (
            p["pools"]["ci-training"].update(gpu_sharing={"strategy": "mps", "replicas": 4}),
            p["profiles"]["supervised"].update(gpu_memory_gb=16),
        ),
        "platform.profiles.supervised.gpu_memory_gb=16: is more than one MPS replica's share of one L40S-1-48G "
        "GPU's 48 GB / 4 = 12 GB; lower the pool's replicas or use time-slicing",
    ),
    Bad(
        "vram-need-above-gpu",
        set_("profiles", "rl", "gpu_memory_gb", value=30),
        "platform.profiles.rl.gpu_memory_gb=30: is more than one L4-1-24G GPU's 24 GB",
    ),
    Bad(
        "bad-operator-namespace",
        set_("gpu_operator", "namespace", value="Kube_System"),
        "platform.gpu_operator.namespace='Kube_System': not a Kubernetes namespace name (a-z, 0-9 and '-', at most 63)",
    ),
    Bad(
        "workload-of-unknown-profile",
        set_("workload", "profiles", "rll", value={"jobs_per_day": 1, "minutes_per_job": 10}),
        "platform.workload.profiles.rll='rll': no such profile (profiles: rl, supervised)",
    ),
    Bad(
        "workload-without-duration",
        drop("workload", "profiles", "rl", "minutes_per_job"),
        "platform.workload.profiles.rl.minutes_per_job=<missing>: required key is missing",
    ),
    Bad(
        "baseline-without-gpu",
        set_("workload", "baseline", "node_type", value="PRO2-XXS"),
        "platform.workload.baseline.node_type='PRO2-XXS': has no GPU to run the jobs on",
    ),
    Bad(
        "baseline-unknown-idle-node",
        set_("workload", "baseline", "idle_node_types", value=["L4-1-24GB"]),
        "platform.workload.baseline.idle_node_types='L4-1-24GB': unknown node type",
    ),
]


RUNNER_CI_CASES = [
    Bad(
        "no-gitlab-section",
        drop("gitlab"),
        "platform.gitlab=<missing>: required key is missing",
    ),
    Bad(
        "empty-project",
        set_("gitlab", "project", value=""),
        "platform.gitlab.project='': not a project path like ml-team/training",
    ),
    Bad(
        "project-without-namespace",
        set_("gitlab", "project", value="training"),
        "platform.gitlab.project='training': not a project path like ml-team/training",
    ),
    Bad(
        "empty-group",
        set_("gitlab", "group", value=""),
        "platform.gitlab.group='': not a group path like ml-team or ml-team/research",
    ),
    Bad(
        "api-url-as-instance-url",
        set_("gitlab", "url", value="https://gitlab.com/api/v4/"),
        "platform.gitlab.url='https://gitlab.com/api/v4/': is the API URL; give the instance URL (the provider's "
        "gitlab:baseUrl is the API URL)",
    ),
    Bad(
        "plain-http",
        set_("gitlab", "url", value="http://gitlab.example.com"),
        "platform.gitlab.url='http://gitlab.example.com': not an https URL of a GitLab instance like "
        "https://gitlab.example.com",
    ),
    Bad(
        "group-runner-without-group",
        lambda p: (p["gitlab"].pop("group"), p["gitlab"].update(runner_scope="group")),
        "platform.gitlab.group=null: gitlab.runner_scope 'group' needs the group's full path",
    ),
    Bad(
        "group-variables-without-group",
        lambda p: (p["gitlab"].pop("group"), p["ci"].update(variables_scope="group")),
        "platform.gitlab.group=null: ci.variables_scope 'group' needs the group's full path",
    ),
    Bad(
        "group-runner-outside-group",
        lambda p: p["gitlab"].update(runner_scope="group", group="other-team"),
        "platform.gitlab.project='ml-team/training': is not in group 'other-team': a group runner serves only the "
        "group's projects",
    ),
    Bad(
        "unknown-scope",
        set_("gitlab", "runner_scope", value="instance"),
        "platform.gitlab.runner_scope='instance': Input should be 'project' or 'group'",
    ),
    Bad(
        "chart-version-not-a-version",
        set_("runner", "chart_version", value="latest"),
        "platform.runner.chart_version='latest': not a chart version like 0.86.0 (pin an exact version)",
    ),
    Bad(
        "chart-version-range",
        set_("runner", "chart_version", value="0.86"),
        "platform.runner.chart_version='0.86': not a chart version like 0.86.0 (pin an exact version)",
    ),
    Bad(
        "default-pool-unknown",
        set_("runner", "default_pool", value="ci-gpu"),
        "platform.runner.default_pool='ci-gpu': no such pool (ci-compile, ci-training, system)",
    ),
    Bad(
        "default-pool-no-profile-targets",
        set_("runner", "default_pool", value="system"),
        "platform.runner.default_pool='system': no profile targets it: every job of the runner gets one "
        "nvidia.com/gpu and a profile's size (pools of profiles: ['ci-compile', 'ci-training'])",
    ),
    Bad(
        "manager-on-scale-to-zero-pool",
        set_("runner", "manager_pool", value="ci-compile"),
        "platform.runner.manager_pool='ci-compile': is not always-on (min_size=0): the runner manager must run all "
        "the time to pick up jobs",
    ),
    Bad(
        "manager-on-always-on-gpu-pool",
        lambda p: (
            p["pools"]["ci-compile"].update(min_size=1),
            p["runner"].update(manager_pool="ci-compile"),
        ),
        "platform.runner.manager_pool='ci-compile': is a GPU pool: its nvidia.com/gpu taint keeps the manager off, "
        "and a GPU node would bill around the clock",
    ),
    Bad(
        "manager-pool-unknown",
        set_("runner", "manager_pool", value="sytem"),
        "platform.runner.manager_pool='sytem': no such pool (ci-compile, ci-training, system)",
    ),
    Bad(
        "no-tags",
        set_("runner", "tags", value=[]),
        "platform.runner.tags=[]: needs at least one tag: the runner takes no untagged jobs",
    ),
    Bad(
        "tag-with-comma",
        set_("runner", "tags", value=["kapsule,gpu"]),
        "platform.runner.tags=['kapsule,gpu']: tag 'kapsule,gpu' must be letters, digits, '_', '.' or '-'",
    ),
    Bad(
        "job-timeout-too-short",
        set_("runner", "job_timeout", value="5m"),
        "platform.runner.job_timeout='5m': must be at least 10m (GitLab's minimum runner timeout)",
    ),
    Bad(
        "namespace-not-dns",
        set_("runner", "namespace", value="GitLab_Runner"),
        "platform.runner.namespace='GitLab_Runner': not a Kubernetes namespace name (1-63 of a-z, 0-9 and '-')",
    ),
    Bad(
        "cache-bucket-name",
        set_("runner", "cache", value={"bucket": "My_Cache"}),
        "platform.runner.cache.bucket='My_Cache': not a bucket name: 3-63 of a-z, 0-9, '.' and '-', starting and "
        "ending alphanumeric",
    ),
    Bad(
        "zero-concurrency",
        set_("runner", "concurrent", value=0),
        "platform.runner.concurrent=0: Input should be greater than or equal to 1",
    ),
    Bad(
        "templates-path-escapes",
        set_("ci", "templates_path", value="../shared/gpu-ci.yml"),
        "platform.ci.templates_path='../shared/gpu-ci.yml': not a repository path like "
        ".gitlab/ci/gpu-ci-templates.yml (relative, .yml or .yaml)",
    ),
    Bad(
        "templates-path-absolute",
        set_("ci", "templates_path", value="/ci/gpu-ci.yml"),
        "platform.ci.templates_path='/ci/gpu-ci.yml': not a repository path like .gitlab/ci/gpu-ci-templates.yml "
        "(relative, .yml or .yaml)",
    ),
    Bad(
        "variable-routes-every-job",
        set_("ci", "variables", value={"KUBERNETES_CPU_REQUEST": "8"}),
        "platform.ci.variables.KUBERNETES_CPU_REQUEST='8': would size or route every job; routing comes from the "
        "profiles' templates",
    ),
    Bad(
        "variable-shadows-derived",
        set_("ci", "variables", value={"REGISTRY": "docker.io/me"}),
        "platform.ci.variables.REGISTRY='docker.io/me': REGISTRY is derived by gpu-ci; do not set it here",
    ),
    Bad(
        "variable-shadows-predefined",
        set_("ci", "variables", "CI_COMMIT_SHA", value={"secret": "sha"}),
        "platform.ci.variables.CI_COMMIT_SHA={secret: 'sha'}: would shadow a GitLab predefined variable",
    ),
    Bad(
        "variable-value-and-secret",
        set_("ci", "variables", "HF_TOKEN", value={"value": "x", "secret": "hf_token"}),
        "platform.ci.variables.HF_TOKEN={value: 'x', secret: 'hf_token'}: give exactly one of value or secret",
    ),
    Bad(
        "variable-secret-key-not-a-key",
        set_("ci", "variables", "HF_TOKEN", value={"secret": "gpu-ci:hf token"}),
        "platform.ci.variables.HF_TOKEN.secret='gpu-ci:hf token': not a stack config key like wandb_api_key "
        "(letters, digits, '_')",
    ),
    Bad(
        "registry-namespace-name",
        set_("registry", "namespace", value="GPU CI"),
        "platform.registry.namespace='GPU CI': not a registry namespace name (a-z, 0-9 and '-')",
    ),
    Bad(
        "typo-in-runner-key",
        set_("runner", "chart_verison", value="0.86.0"),
        "platform.runner.chart_verison='0.86.0': unknown key (allowed: access_level, cache, chart_version, "
        "concurrent, default_image, default_pool, description, job_timeout, manager_pool, namespace, tags)",
    ),
]


ALL_CASES = [*SPEC_CASES, *RUNNER_CI_CASES]
