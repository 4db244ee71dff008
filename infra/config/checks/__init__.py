"""The spec's refusals: everything `load_spec` checks beyond a field's own type and bounds.

Two homes say "no" in gpu-ci. This is the first: what one section, or a reference between sections, gets wrong,
known from the spec alone. (Types, patterns, bounds and counts sit on the fields themselves, in each section's
model; what only shows once pools, runners and templates are derived is `infra.model.checks`.)

`infra.config.load.spec_problems` runs them in the order of the spec's sections: the infrastructure
(`infrastructure.py`: node types, cluster, pools and their warm capacity, the operator's namespace) then the
jobs (`jobs.py`: profiles, workload, runner, GitLab, CI variables). Checked, each as one
`platform.<key>=<value>: <reason>` problem:
- node types: a type that is not built in states every figure (`node_types`);
- cluster: an adopted cluster is in the stack's region, auto-upgrade needs a minor version, the name;
- pools: the name (a DNS label), a known node type (with a close match), a zone of the region that sells the
  type, min_size <= max_size >= 1, a fixed size without autoscaling, the root volume's floor, GPU sharing on a
  GPU pool only, node labels (syntax, reserved prefixes); at least one always-on pool on a Kapsule cluster;
- profiles: the name, an existing GPU pool, limits at or above requests; templates and families unique;
- workload: its profiles exist, the day's jobs within the cap, baseline node types known and GPU;
- runner: `default_pool` exists and is targeted, `manager_pool` (as set or chosen) is an always-on CPU pool;
  no MPS (its pipe directory and `/dev/shm` shared by every job on a GPU) on a pool whose runner takes jobs of
  unprotected branches (`access_level: not_protected`);
- gitlab: a group scope names the group, and the project sits in it;
- the GPU operator's namespace is not the runners'; the runners' and the placeholders' are not the
  cluster's own;
- held slots and warm windows: on GPU pools; within max_size, not overlapping each other; the placeholders'
  priority at or above the autoscaler's expendable cutoff and below the jobs', in a namespace of their own;
- ci: variable names GitLab accepts, none that shadows a derived, `KUBERNETES_*`, `CI_*` or `GITLAB_*`
  variable, none that disarms a guard (`NVIDIA_*`, `CUDA_VISIBLE_DEVICES`, `CUDA_MPS_*`: GPUs around the
  device plugin; `FF_*`: the runner's feature flags), no credential in clear (CI or profile variables), `image`
  names the configured registry variable.
"""
