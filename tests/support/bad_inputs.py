"""The bad-input corpus: invalid stack configs, each with the one line it must fail with.

Used three ways: `load_spec` raises exactly that line (test_spec.py, test_spec_integration.py), and the
whole program stops with it before registering any resource (test_bad_input_corpus.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Edit = Callable[[dict[str, Any]], object]
"""Changes the platform object in place (what it returns is ignored: lambdas may return a tuple)."""


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
        "platform.pools.ci-compile.max_sise=2: unknown key; did you mean max_size?",
    ),
    Bad(
        "cold-start-p90-below-median",
        set_("pools", "ci-training", "cold_start_p90_minutes", value=12),
        "platform.pools.ci-training.cold_start_p90_minutes=12: is below cold_start_minutes=15 (the median)",
    ),
    Bad(
        "cold-start-max-below-p90",
        lambda p: p["pools"]["ci-training"].update(cold_start_p90_minutes=20, cold_start_max_minutes=18),
        "platform.pools.ci-training.cold_start_max_minutes=18: is below cold_start_p90_minutes=20",
    ),
    Bad(
        "cold-start-max-below-median",
        set_("pools", "ci-training", "cold_start_max_minutes", value=14),
        "platform.pools.ci-training.cold_start_max_minutes=14: is below cold_start_minutes=15",
    ),
    Bad(
        "cold-start-p90-float",
        set_("pools", "ci-training", "cold_start_p90_minutes", value=17.5),
        "platform.pools.ci-training.cold_start_p90_minutes=17.5: Input should be a valid integer",
    ),
    Bad(
        "cold-start-max-huge",
        set_("pools", "ci-training", "cold_start_max_minutes", value=241),
        "platform.pools.ci-training.cold_start_max_minutes=241: Input should be less than or "
        "equal to 240 (gpu-ci's limit: docs/config-limits.md)",
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
        "platform.cluster.autoscaler.scale_down_unneeded_time='five minutes': not a duration like 5m, 300s, 1h or "
        "3h30m",
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
            p["runner"].update(access_level="ref_protected"),
            p["profiles"]["supervised"].update(gpu_memory_gb=16),
        ),
        "platform.profiles.supervised.gpu_memory_gb=16: is more than one MPS replica's share of one L40S-1-48G "
        "GPU's 48 GB / 4 = 12 GB; lower the pool's replicas or use time-slicing",
    ),
    Bad(
        "mps-on-a-runner-of-unprotected-branches",
        set_("pools", "ci-training", "gpu_sharing", value={"strategy": "mps", "replicas": 4}),
        "platform.pools.ci-training.gpu_sharing.strategy='mps': shares the MPS daemon's pipe directory and a "
        "node-wide /dev/shm with every job on the GPU, and runner.access_level=not_protected runs jobs of any branch "
        "there: they could read protected jobs' shared memory or lift the MPS limits (set runner.access_level: "
        "ref_protected, or use time-slicing)",
    ),
    Bad(
        "vram-need-above-gpu",
        set_("profiles", "rl", "gpu_memory_gb", value=30),
        "platform.profiles.rl.gpu_memory_gb=30: is more than one L4-1-24G GPU's 24 GB",
    ),
    Bad(
        "bad-operator-namespace",
        set_("gpu_operator", "namespace", value="Kube_System"),
        "platform.gpu_operator.namespace='Kube_System': not a Kubernetes namespace name (1-63 of a-z, 0-9 and '-')",
    ),
    Bad(
        "workload-of-unknown-profile",
        set_("workload", "profiles", "rll", value={"jobs_per_day": 1, "minutes_per_job": 10}),
        "platform.workload.profiles.rll='rll': no such profile (profiles: rl, supervised)",
    ),
    Bad(
        "workload-without-duration",
        set_("workload", "profiles", "rl", value={"jobs_per_day": 12}),
        "platform.workload.profiles.rl={jobs_per_day: 12}: give kinds, or both jobs_per_day and minutes_per_job "
        "(minutes_per_job is missing)",
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
        "zero-poll-margin",
        set_("runner", "poll_timeout_margin_minutes", value=0),
        "platform.runner.poll_timeout_margin_minutes=0: Input should be greater than or equal to 1",
    ),
    Bad(
        "templates-path-escapes",
        set_("ci", "templates_path", value="../other/gpu-ci.yml"),
        "platform.ci.templates_path='../other/gpu-ci.yml': not a repository path like "
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
        "platform.runner.chart_verison='0.86.0': unknown key; did you mean chart_version?",
    ),
    Bad(
        "chart-repository-plain-http",
        set_("runner", "chart_repository", value="http://charts.example.com"),
        "platform.runner.chart_repository='http://charts.example.com': not a chart repository URL like "
        "https://charts.gitlab.io (http only on 127.0.0.1)",
    ),
]


def _rename_pool(old: str, new: str) -> Edit:
    """Rename a pool and every reference to it, so only the name itself is wrong."""

    def edit(platform: dict[str, Any]) -> None:
        platform["pools"][new] = platform["pools"].pop(old)
        for profile in platform["profiles"].values():
            if profile["pool"] == old:
                profile["pool"] = new
        if platform["runner"].get("default_pool") == old:
            platform["runner"]["default_pool"] = new

    return edit


def _rename_profile(old: str, new: str) -> Edit:
    """Rename a profile and its workload entry, so only the name itself is wrong."""

    def edit(platform: dict[str, Any]) -> None:
        platform["profiles"][new] = platform["profiles"].pop(old)
        platform["workload"]["profiles"][new] = platform["workload"]["profiles"].pop(old)

    return edit


def _gpu_pools_of(nodes: int) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        for name in ("ci-compile", "ci-training"):
            platform["pools"][name]["max_size"] = nodes

    return edit


def _many_pools(platform: dict[str, Any]) -> None:
    for i in range(20_000):
        platform["pools"][f"extra-{i}"] = {"node_type": "L4-1-24G", "zone": "fr-par-2"}


def _many_variables(platform: dict[str, Any]) -> None:
    platform["ci"]["variables"] = {f"V{i}": "x" for i in range(60_000)}


HARDENING_CASES = [
    Bad(
        "template-trailing-newline",
        set_("profiles", "rl", "template", value=".train-rl-base\n"),
        "platform.profiles.rl.template='.train-rl-base\\n': a hidden GitLab CI job name starts with "
        "'.', then a-z, 0-9, '-' or '_' (at most 255)",
    ),
    Bad(
        "project-trailing-newline",
        set_("gitlab", "project", value="ml-team/training\n"),
        "platform.gitlab.project='ml-team/training\\n': not a project path like ml-team/training",
    ),
    Bad(
        "pool-name-trailing-newline",
        _rename_pool("ci-compile", "ci-compile\n"),
        "platform.pools.'ci-compile\\n'='ci-compile\\n': pool name must be 1-63 of a-z, 0-9 and '-' "
        "(it is a label value and part of the runner's node-selector regex)",
    ),
    Bad(
        "runner-tag-trailing-newline",
        set_("runner", "tags", value=["kapsule", "gpu\n"]),
        "platform.runner.tags=['kapsule', 'gpu\\n']: tag 'gpu\\n' must be letters, digits, '_', '.' or '-'",
    ),
    Bad(
        "duration-trailing-newline",
        set_("cluster", "autoscaler", "scale_down_unneeded_time", value="5m\n"),
        "platform.cluster.autoscaler.scale_down_unneeded_time='5m\\n': not a duration like 5m, 300s, 1h or 3h30m",
    ),
    Bad(
        "jobs-per-day-huge",
        set_("workload", "profiles", "rl", "jobs_per_day", value=100_000_000),
        "platform.workload.profiles.rl.jobs_per_day=100000000: Input should be less than or equal "
        "to 2000 (gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "batches-per-day-huge",
        set_("workload", "batches_per_day", value=100_000_000),
        "platform.workload.batches_per_day=100000000: Input should be less than or equal to 1440 "
        "(gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "cpu-exponent-huge",
        set_("profiles", "rl", "cpu_request", value="1e999999999"),
        "platform.profiles.rl.cpu_request='1e999999999': exponent 999999999 is too large: "
        "Kubernetes keeps quantities as int64 milli-units",
    ),
    Bad(
        "cpu-limit-exponent",
        set_("profiles", "rl", "cpu_limit", value="1e9999999"),
        "platform.profiles.rl.cpu_limit='1e9999999': exponent 9999999 is too large: Kubernetes "
        "keeps quantities as int64 milli-units",
    ),
    Bad(
        "minutes-per-job-inf",
        set_("workload", "profiles", "rl", "minutes_per_job", value=float("inf")),
        "platform.workload.profiles.rl.minutes_per_job=inf: Input should be a finite number",
    ),
    Bad(
        "minutes-per-job-nan",
        set_("workload", "profiles", "rl", "minutes_per_job", value=float("nan")),
        "platform.workload.profiles.rl.minutes_per_job=nan: Input should be a finite number",
    ),
    Bad(
        "cold-start-float",
        set_("pools", "ci-compile", "cold_start_minutes", value=1e30),
        "platform.pools.ci-compile.cold_start_minutes=1e+30: Input should be a valid integer",
    ),
    Bad(
        "integer-of-5000-digits",
        set_("pools", "ci-compile", "max_size", value=10**5000 - 1),
        "platform.pools.ci-compile.max_size=<an integer of about 5000 digits>: is too large a number for any setting",
    ),
    Bad(
        "integer-of-5000-digits-for-a-name",
        set_("cluster", "name", value=10**5000 - 1),
        "platform.cluster.name=<an integer of about 5000 digits>: is too large a number for any setting",
    ),
    Bad(
        "cold-start-huge",
        set_("pools", "ci-compile", "cold_start_minutes", value=1_000_000_000),
        "platform.pools.ci-compile.cold_start_minutes=1000000000: Input should be less than or "
        "equal to 240 (gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "pool-max-huge",
        set_("pools", "ci-training", "max_size", value=1_000_000_000),
        "platform.pools.ci-training.max_size=1000000000: Input should be less than or equal to 100 "
        "(gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "pools-above-quota",
        _gpu_pools_of(60),
        "platform.pools={ci-compile: 60, ci-training: 60, system: 1}: 121 nodes at max_size in "
        "all, above gpu-ci's quota of 100 (docs/config-limits.md)",
    ),
    Bad(
        "root-volume-float",
        set_("pools", "ci-compile", "root_volume_size_gb", value=1e30),
        "platform.pools.ci-compile.root_volume_size_gb=1e+30: Input should be a valid integer",
    ),
    Bad(
        "cpu-limit-exa",
        set_("profiles", "rl", "cpu_limit", value="1E"),
        "platform.profiles.rl.cpu_limit='1E': is more than Kubernetes can represent (int64 milli-units)",
    ),
    Bad(
        "cpu-limit-above-node",
        set_("profiles", "rl", "cpu_limit", value="64"),
        "platform.profiles.rl.cpu_limit='64': is larger than one L4-1-24G node's allocatable 7000m",
    ),
    Bad(
        "memory-limit-above-node",
        set_("profiles", "supervised", "memory_limit", value="200Gi"),
        "platform.profiles.supervised.memory_limit='200Gi': is larger than one L40S-1-48G node's allocatable 92 GiB",
    ),
    Bad(
        "memory-without-unit",
        set_("profiles", "rl", "memory_request", value="3000"),
        "platform.profiles.rl.memory_request='3000': is below 1Mi: a quantity without a unit is "
        "bytes (did you mean 3000Mi?)",
    ),
    Bad(
        "reserve-half-a-byte",
        set_("allocatable_reserve", "memory", value=".5"),
        "platform.allocatable_reserve.memory='.5': is below 1Mi: a quantity without a unit is "
        "bytes (did you mean .5Mi?)",
    ),
    Bad(
        "manager-pool-too-small",
        set_("pools", "system", "node_type", value="PLAY2-NANO"),
        "platform.pools.system.node_type='PLAY2-NANO': cannot hold the 2 runner managers (100m, 128Mi "
        "each): allocatable memory 0Mi < 256Mi after the node's reserve; pick a larger type or lower "
        "allocatable_reserve",
    ),
    Bad(
        "templates-path-is-the-pipeline",
        set_("ci", "templates_path", value=".gitlab-ci.yml"),
        "platform.ci.templates_path='.gitlab-ci.yml': must be a file under .gitlab/ci/ (e.g. "
        ".gitlab/ci/gpu-ci-templates.yml): gpu-ci must never replace the project's .gitlab-ci.yml "
        "or another of its files",
    ),
    Bad(
        "templates-path-outside-gitlab-ci",
        set_("ci", "templates_path", value="ci/templates.yml"),
        "platform.ci.templates_path='ci/templates.yml': must be a file under .gitlab/ci/ (e.g. "
        ".gitlab/ci/gpu-ci-templates.yml): gpu-ci must never replace the project's .gitlab-ci.yml "
        "or another of its files",
    ),
    Bad(
        "plain-hf-token",
        set_("ci", "variables", value={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345"}),
        "platform.ci.variables.HF_TOKEN=<redacted>: looks like a Hugging Face token: a plain value "
        "is printed by plan and written in clear; store it with `pulumi config set --secret "
        "hf_token ...` and write {secret: hf_token}",
    ),
    Bad(
        "plain-glpat-value",
        set_("ci", "variables", value={"DEPLOY": "glpat-abcdefghijklmnop1234"}),
        "platform.ci.variables.DEPLOY=<redacted>: looks like a GitLab token: a plain value is "
        "printed by plan and written in clear; store it with `pulumi config set --secret deploy "
        "...` and write {secret: deploy}",
    ),
    Bad(
        "profile-variable-credential",
        set_("profiles", "rl", "variables", "WANDB_API_KEY", value="0123456789abcdef"),
        "platform.profiles.rl.variables.WANDB_API_KEY=<redacted>: looks like a credential by its "
        "name: profile variables are committed in clear into the templates file; make it a "
        "platform.ci.variables entry with {secret: wandb_api_key}",
    ),
    Bad(
        "token-under-an-unknown-key",
        set_("gitlab", "token", value="glpat-abcdefghijklmnop1234"),
        "platform.gitlab.token=<redacted>: looks like a GitLab token: the stack file is committed in clear and "
        "plan prints it; a credential belongs in a stack secret (`pulumi config set --secret <key>`), never in the "
        "platform spec",
    ),
    Bad(
        "token-as-a-name",
        set_("cluster", "name", value="glpat-abcdefghijklmnop1234"),
        "platform.cluster.name=<redacted>: looks like a GitLab token: the stack file is committed in clear and "
        "plan prints it; a credential belongs in a stack secret (`pulumi config set --secret <key>`), never in the "
        "platform spec",
    ),
    Bad(
        "token-in-a-url",
        set_("gitlab", "url", value="https://oauth2:glpat-abcdefghijklmnop1234@gitlab.com"),
        "platform.gitlab.url=<redacted>: looks like a GitLab token: the stack file is committed in clear and "
        "plan prints it; a credential belongs in a stack secret (`pulumi config set --secret <key>`), never in the "
        "platform spec",
    ),
    Bad(
        "password-in-a-url",
        set_("gitlab", "url", value="https://oauth2:hunter2-is-my-password@gitlab.com"),
        "platform.gitlab.url='https://<redacted>@gitlab.com': not an https URL of a GitLab instance like "
        "https://gitlab.example.com",
    ),
    Bad(
        "password-under-an-unknown-key",
        set_("gitlab", "password", value="hunter2-is-my-password"),
        "platform.gitlab.password=<redacted>: unknown key (allowed: group, project, runner_scope, url)",
    ),
    Bad(
        "token-as-a-pool-name",
        lambda p: p["pools"].update({"glpat-abcdefghijklmnop1234": p["pools"]["ci-compile"]}),
        "platform.pools=<redacted>: looks like a GitLab token: the stack file is committed in clear and "
        "plan prints it; a credential belongs in a stack secret (`pulumi config set --secret <key>`), never in the "
        "platform spec",
    ),
    Bad(
        "twenty-thousand-pools",
        _many_pools,
        "platform.pools={system: {node_type: 'PRO2-XXS', zone: 'fr-par-2', min_size: 1, max_size: "
        "1, autoscaling: false}, ci-compile: {node_type: 'L4-1-24G', zone: 'fr-par-2', min_size: "
        "0, max_size: 1, root_volume_size_gb: …: Dictionary should have at most 32 items after "
        "validation, not more (gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "sixty-thousand-variables",
        _many_variables,
        "platform.ci.variables={V0: 'x', V1: 'x', V2: 'x', V3: 'x', V4: 'x', V5: 'x', V6: 'x', V7: 'x', "
        "V8: 'x', V9: 'x', V10: 'x', V11: 'x', V12: 'x', V13: 'x', V14: 'x', V15: 'x', V16: 'x', V17: 'x', "
        "V18: 'x', V19: 'x', V20: 'x'…: 60000 variables, more than gpu-ci's limit of 200",
    ),
    Bad(
        "value-of-9-megabytes",
        set_("gitlab", "project", value="ml-team/" + "x" * 9_200_000),
        "platform.gitlab.project='ml-team/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…: String should have at most 1024 characters "
        "(gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "min-size-yes",
        set_("pools", "system", "min_size", value=True),
        "platform.pools.system.min_size=true: Input should be a valid integer",
    ),
    Bad(
        "template-name-2-megabytes",
        set_("profiles", "rl", "template", value="." + "a" * 2_000_000),
        "platform.profiles.rl.template='.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…: String should have at most 1024 "
        "characters (gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "replicas-as-string",
        set_("pools", "ci-compile", "gpu_sharing", "replicas", value="2"),
        "platform.pools.ci-compile.gpu_sharing.replicas='2': Input should be a valid integer",
    ),
    Bad(
        "registry-variable-but-image-uses-registry",
        set_("ci", "registry_variable", value="REGISTRY_PROD"),
        "platform.ci.image='${REGISTRY}/training:${CI_COMMIT_SHA}': uses ${REGISTRY}, but "
        "ci.registry_variable is REGISTRY_PROD: write ${REGISTRY_PROD}",
    ),
    Bad(
        "profile-name-too-long",
        _rename_profile("rl", "r" * 64),
        "platform.profiles.rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr='rrrrrr"
        "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr': profile name must be 1-63 of "
        "a-z, 0-9 and '-'",
    ),
    Bad(
        "cluster-name-too-long",
        set_("cluster", "name", value="c" * 64),
        "platform.cluster.name='cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc': "
        "String should have at most 63 characters (gpu-ci's limit: docs/config-limits.md)",
    ),
    Bad(
        "manager-pool-newline",
        set_("runner", "manager_pool", value="system\n"),
        "platform.runner.manager_pool='system\\n': no such pool (ci-compile, ci-training, system)",
    ),
    Bad(
        "private-subnet-newline",
        set_("cluster", "private_network_subnet", value="172.16.0.0/22\n"),
        "platform.cluster.private_network_subnet='172.16.0.0/22\\n': not an IPv4 CIDR ('22\\n' is not a valid netmask)",
    ),
    Bad(
        "allowed-image-newline",
        set_("runner", "allowed_images", value=["python:3\n"]),
        "platform.runner.allowed_images.0='python:3\\n': not an image reference or glob (1-255 characters, no spaces, "
        "no braces: Helm's tpl would run a {{ }})",
    ),
]
"""The fuzz findings: trailing newlines, hangs, tracebacks, absurd numbers, unit slips, credentials in clear,
giant inputs. Each must fail at once (microseconds to milliseconds), with one line naming its key."""


GUARD_CASES = [
    Bad(
        "nvidia-visible-devices-in-a-profile",
        set_("profiles", "rl", "variables", "NVIDIA_VISIBLE_DEVICES", value="all"),
        "platform.profiles.rl.variables.NVIDIA_VISIBLE_DEVICES='all': would change which GPUs a job sees around the "
        "device plugin (NVIDIA_VISIBLE_DEVICES=all shows it every GPU of its node): the GPU share comes from the "
        "pool's gpu_sharing",
    ),
    Bad(
        "cuda-visible-devices-for-every-job",
        set_("ci", "variables", value={"CUDA_VISIBLE_DEVICES": "0,1"}),
        "platform.ci.variables.CUDA_VISIBLE_DEVICES='0,1': would change which GPUs a job sees around the device "
        "plugin (NVIDIA_VISIBLE_DEVICES=all shows it every GPU of its node): the GPU share comes from the pool's "
        "gpu_sharing",
    ),
    Bad(
        "mps-share-of-a-profile",
        set_("profiles", "supervised", "variables", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", value="100"),
        "platform.profiles.supervised.variables.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='100': would change the job's MPS "
        "client settings (its pipe, its share of the GPU's threads or memory), which the device plugin sets for each "
        "replica: the GPU share comes from the pool's gpu_sharing",
    ),
    Bad(
        "feature-flag-dropping-the-gpu-request",
        set_("ci", "variables", value={"FF_USE_ADVANCED_POD_SPEC_CONFIGURATION": "false"}),
        "platform.ci.variables.FF_USE_ADVANCED_POD_SPEC_CONFIGURATION='false': a job variable overrides the runner's "
        "feature flags (FF_USE_ADVANCED_POD_SPEC_CONFIGURATION=false drops the GPU request): gpu-ci sets them in "
        "each runner's config",
    ),
    Bad(
        "gpu-operator-in-the-runner-namespace",
        set_("gpu_operator", "namespace", value="gitlab-runner"),
        "platform.gpu_operator.namespace='gitlab-runner': is the runners' namespace (platform.runner.namespace): its "
        "Pod Security and default-deny network policies would break the GPU operator, and the sharing ConfigMap "
        "would sit where jobs run",
    ),
    Bad(
        "gpu-pool-no-runner-reaches",
        set_("pools", "spare", value={"node_type": "L4-1-24G", "zone": "fr-par-2"}),
        "platform.pools.spare='L4-1-24G': no profile's runner reaches this GPU pool: no CI job would run on it, yet "
        "`pulumi up` would create and protect it (point a profile's pool at it, or remove it)",
    ),
    Bad(
        "gpu-pool-left-behind-by-a-rename",
        lambda p: (
            p.update(pools={("l4" if k == "ci-compile" else k): v for k, v in p["pools"].items()})
            or p["pools"].update({"ci-compile": dict(p["pools"]["l4"])})
            or p["profiles"]["rl"].update(pool="l4")
            or p["runner"].update(default_pool="l4")
        ),
        "platform.pools.ci-compile='L4-1-24G': no profile's runner reaches this GPU pool: no CI job would run on it, "
        "yet `pulumi up` would create and protect it (point a profile's pool at it, or remove it)",
    ),
    Bad(
        "job-timeout-shorter-than-an-attempt",
        set_("runner", "job_timeout", value="3h"),
        "platform.runner.job_timeout='3h': cannot hold an attempt on pool ci-compile: its poll_timeout 49 min "
        "(runner.node_wait_tolerance=2h over 3 attempts, cold start 15 min) + its longest job 153 min (from "
        "platform.workload.profiles.rl.kinds.hyperopt.minutes_p90, on a full node); raise the timeout to more than "
        "202 min, or lower the tolerance",
    ),
    Bad(
        "tolerance-past-a-day",
        set_("runner", "node_wait_tolerance", value="25h"),
        "platform.runner.node_wait_tolerance='25h': must be at most 24h: past a day, GitLab drops the pending jobs "
        "anyway",
    ),
]
"""Values that would disarm a guard, or a platform whose waits do not fit its timeouts."""


def _warm(**settings: Any) -> Edit:
    """Working-hours warm windows on ci-training, with `warm_capacity` settings."""

    def edit(platform: dict[str, Any]) -> None:
        platform["pools"]["ci-training"]["warm"] = [{"days": "Mon-Fri", "from": "08:00", "to": "19:00"}]
        platform.setdefault("warm_capacity", {}).update(settings)

    return edit


NEWER_KEY_CASES = [
    Bad(
        "kind-median-overflowing-its-p99",
        set_("workload", "profiles", "rl", "kinds", "train-validate", "minutes_per_job", value=1e-300),
        "platform.workload.profiles.rl.kinds.train-validate={class: 'merge_request', jobs_per_day: 6, "
        "minutes_per_job: 1e-300, minutes_p90: 40, days: 'Mon-Fri', from: '09:00', to: '18:00'}: minutes_p90=40 "
        "over minutes_per_job=1e-300 spreads the run times past a week (10080 min) at their p99, the longest run "
        "the simulation draws: bring the two closer",
    ),
    Bad(
        "kind-p90-a-week",
        set_("workload", "profiles", "rl", "kinds", "hyperopt", "minutes_p90", value=10080),
        "platform.workload.profiles.rl.kinds.hyperopt={class: 'batch', jobs_per_day: 2, minutes_per_job: 146.7, "
        "minutes_p90: 10080, days: 'Mon-Fri', from: '13:00', to: '15:00'}: minutes_p90=10080 over "
        "minutes_per_job=146.7 spreads the run times past a week (10080 min) at their p99, the longest run the "
        "simulation draws: bring the two closer",
    ),
    Bad(
        "clock-with-an-arabic-indic-digit",
        set_("workload", "profiles", "rl", "kinds", "train-validate", "from", value="0\u0669:00"),
        "platform.workload.profiles.rl.kinds.train-validate.from='0\u0669:00': not a time of day like 08:00 "
        "(00:00 to 24:00, quoted in YAML)",
    ),
    Bad(
        "clock-read-as-base-60",
        set_("workload", "profiles", "rl", "kinds", "train-validate", "to", value=1080),
        "platform.workload.profiles.rl.kinds.train-validate.to=1080: is how YAML reads 18:00 unquoted (base 60): "
        'write "18:00"',
    ),
    Bad(
        "days-with-a-trailing-newline",
        set_("workload", "profiles", "rl", "kinds", "train-validate", "days", value="Mon-Fri\n"),
        "platform.workload.profiles.rl.kinds.train-validate.days='Mon-Fri\\n': 'Mon-Fri\\n' is not a day or a "
        "range of days like Mon-Fri (Mon ... Sun)",
    ),
    Bad(
        "time-zone-of-the-machine",
        set_("workload", "time_zone", value="localtime"),
        "platform.workload.time_zone='localtime': not an IANA time zone like Europe/Paris or UTC",
    ),
    Bad(
        "runner-in-kube-system",
        lambda p: (p["runner"].update(namespace="kube-system"), p["gpu_operator"].update(namespace="gpu-operator")),
        "platform.runner.namespace='kube-system': is one of the cluster's own namespaces: gpu-ci creates this one, "
        "with Pod Security restricted and default-deny network policies that would break what runs there; give it "
        "its own",
    ),
    Bad(
        "placeholders-in-default",
        _warm(namespace="default"),
        "platform.warm_capacity.namespace='default': is one of the cluster's own namespaces: gpu-ci creates this "
        "one, with Pod Security restricted and default-deny network policies that would break what runs there; "
        "give it its own",
    ),
    Bad(
        "placeholder-image-with-a-password",
        _warm(pause_image="ci:hunter2-is-my-password@registry.k8s.io/pause:3.10"),
        "platform.warm_capacity.pause_image='<redacted>@registry.k8s.io/pause:3.10': not an image reference like "
        "registry.k8s.io/pause:3.10 (host/path:tag or @sha256:digest; no scheme, no user:password@, no glob)",
    ),
    Bad(
        "scaler-image-a-glob",
        _warm(scaler_image="curlimages/curl:*"),
        "platform.warm_capacity.scaler_image='curlimages/curl:*': not an image reference like "
        "registry.k8s.io/pause:3.10 (host/path:tag or @sha256:digest; no scheme, no user:password@, no glob)",
    ),
    Bad(
        "held-slots-on-a-cpu-pool",
        set_("pools", "system", "merge_request_slots", value=1),
        "platform.pools.system.merge_request_slots=1: held slots are for GPU pools: this pool has no runner to hold "
        "them (its nodes run no CI job)",
    ),
]
"""Hostile values on the keys of the merge-request levers, the workload's kinds and hours, and the namespaces
and images gpu-ci creates: each refused at its key before any resource."""


_NUMBERS = "unquoted, YAML and Pulumi read 1.30 as the number 1.3, 0755 as 493 and 1_000 as 1000"


def _a_number(key: str) -> str:
    return f'is a number, and this key takes text: quote it as you typed it ({key}: "..."); {_NUMBERS}'


_SECRET_UUID = "0c4e2a9f-7d31-4b8e-a5f6-9e8d7c6b5a40"

INPUT_CLASS_CASES = [
    Bad(
        "kubernetes-version-a-number",
        set_("cluster", "version", value=1.4),
        "platform.cluster.version=1.4: " + _a_number("version"),
    ),
    Bad(
        "runner-tag-a-number",
        set_("runner", "tags", value=["kapsule", 2.5]),
        "platform.runner.tags.1=2.5: " + _a_number("tags"),
    ),
    Bad(
        "ci-variable-an-octal-mode",
        set_("ci", "variables", value={"UMASK": 18}),
        "platform.ci.variables.UMASK=18: " + _a_number("UMASK"),
    ),
    Bad(
        "profile-variable-a-float",
        lambda p: p["profiles"]["rl"]["variables"].update(TORCH_VERSION=2.4),
        "platform.profiles.rl.variables.TORCH_VERSION=2.4: " + _a_number("TORCH_VERSION"),
    ),
    Bad(
        "family-a-number",
        set_("profiles", "rl", "families", value=["dqn", 511]),
        "platform.profiles.rl.families.1=511: " + _a_number("families"),
    ),
    Bad(
        "pool-key-a-number",
        lambda p: p["pools"].update({7: p["pools"].pop("system")}),
        'platform.pools.7=7: is a number as a key, where a name belongs: quote it ("7":); ' + _NUMBERS,
    ),
    Bad(
        "name-a-boolean",
        set_("cluster", "name", value=False),
        'platform.cluster.name=false: is a boolean, and this key takes text: quote it (name: "..."); unquoted, YAML '
        "reads yes, no, on, off, true and false as booleans",
    ),
    Bad(
        "stage-null",
        set_("ci", "stage", value=None),
        "platform.ci.stage=null: is null, and this key takes text: quote it, or leave the key out; unquoted, YAML "
        "reads ~ and null as null",
    ),
    Bad(
        "duration-a-number",
        set_("runner", "job_timeout", value=7200),
        "platform.runner.job_timeout=7200: is a number, and a duration has its unit: write 7200s, or 5m, 1h, 3h30m",
    ),
    Bad(
        "duration-with-a-full-width-digit",
        set_("cluster", "autoscaler", "scale_down_delay_after_add", value="\uff17m"),
        "platform.cluster.autoscaler.scale_down_delay_after_add='\uff17m': not a duration like 5m, 300s, 1h or 3h30m",
    ),
    Bad(
        "version-with-devanagari-digits",
        set_("cluster", "version", value="\u0967.\u0969\u096c"),
        "platform.cluster.version='\u0967.\u0969\u096c': not a Kubernetes version like 1.35 or 1.35.3",
    ),
    Bad(
        "chart-version-with-a-bengali-digit",
        set_("runner", "chart_version", value="0.8\u09ec.0"),
        "platform.runner.chart_version='0.8\u09ec.0': not a chart version like 0.86.0 (pin an exact version)",
    ),
    Bad(
        "node-type-in-scaleway-s-own-spelling",
        set_("pools", "ci-training", "node_type", value="l40s_1_48g"),
        "platform.pools.ci-training.node_type='l40s_1_48g': is L40S-1-48G to Scaleway, which compares node types "
        "ignoring case, and '-' and '_' alike: write L40S-1-48G",
    ),
    Bad(
        "node-type-override-spelled-otherwise",
        set_("node_types", value={"pro2-xxs": {"eur_per_hour": 0.1}}),
        "platform.node_types.pro2-xxs='pro2-xxs': is PRO2-XXS to Scaleway, which compares node types ignoring case, "
        "and '-' and '_' alike: write PRO2-XXS",
    ),
    Bad(
        "node-type-override-with-a-tab",
        set_("node_types", value={"PRO2-XXS\t": {"eur_per_hour": 0.1}}),
        "platform.node_types.'PRO2-XXS\\t'='PRO2-XXS\\t': not a node type name (letters, digits, '-' and '_')",
    ),
    Bad(
        "default-image-a-helm-template",
        set_("runner", "default_image", value="busybox:{{ .Release.Name }}"),
        "platform.runner.default_image='busybox:{{ .Release.Name }}': not an image reference like "
        "registry.k8s.io/pause:3.10 (host/path:tag or @sha256:digest; no scheme, no user:password@, no glob)",
    ),
    Bad(
        "allowed-image-a-helm-template",
        set_("runner", "allowed_images", value=["registry.example.com/{{ .Values.x }}:*"]),
        "platform.runner.allowed_images.0='registry.example.com/{{ .Values.x }}:*': not an image reference or glob "
        "(1-255 characters, no spaces, no braces: Helm's tpl would run a {{ }})",
    ),
    Bad(
        "scaleway-secret-key-under-another-name",
        set_("ci", "variables", value={"OBJECT_STORE_SK": _SECRET_UUID}),
        "platform.ci.variables.OBJECT_STORE_SK=<redacted>: looks like a Scaleway secret key (a UUID, in a variable "
        "whose name does not end in _ID): a plain value is printed by plan and written in clear; store it with "
        "`pulumi config set --secret object_store_sk ...` and write {secret: object_store_sk}",
    ),
    Bad(
        "kubeconfig-client-key-in-a-profile-variable",
        lambda p: p["profiles"]["rl"]["variables"].update(KCFG="client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRF"),
        "platform.profiles.rl.variables.KCFG=<redacted>: looks like a base64 PEM block (a kubeconfig's "
        "client-key-data): profile variables are committed in clear into the templates file; make it a "
        "platform.ci.variables entry with {secret: kcfg}",
    ),
    Bad(
        "bytes-holding-a-deploy-token",
        set_("registry", "namespace", value=b"gldt-" + b"Q7" * 10),
        "platform.registry.namespace=<redacted>: is bytes (YAML's !!binary) holding a GitLab token: the stack file is "
        "committed in clear and plan prints it; a credential belongs in a stack secret (`pulumi config set --secret "
        "<key>`), never in the platform spec",
    ),
    Bad(
        "a-set-where-a-list-belongs",
        set_("runner", "pool_tags", value={"kapsule"}),
        "platform.runner.pool_tags=…: is a set (YAML's !!set), which no setting takes: write the value as text, a "
        "number or a list",
    ),
]
"""Issue 30's input classes: a number, boolean or null where text belongs (never converted), digits of other
scripts, node types Scaleway reads as another's, Helm templates in images, credentials by shape, YAML types no
stack config holds: each refused at its key, with values other than the issue's reproductions."""


ALL_CASES = [*SPEC_CASES, *RUNNER_CI_CASES, *HARDENING_CASES, *GUARD_CASES, *NEWER_KEY_CASES, *INPUT_CLASS_CASES]
