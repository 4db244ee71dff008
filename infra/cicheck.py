"""Lint a training repository's `.gitlab-ci.yml` against the platform spec (pure: no Pulumi import).

What GitLab and the runner would do with the pipeline, checked offline:
- local `include:`s are read (the generated templates file, when absent from the checkout, is taken
  as rendered from the spec: it is what `pulumi up` commits), then every job's `extends:` chain is
  merged the way GitLab merges it (hashes deep-merged, everything else replaced);
- every train/hyperopt job of a model family (`train-validate-dqn`, `hyperopt-tft`: a name token that is
  a family of a profile) must extend its profile's template, be taken by the runner (its tags) and, if it
  overrides the pool, stay on the profile's pool;
- no job the runner takes may set a `KUBERNETES_*` request or limit above the runner's maximum (the job
  would fail, not be clamped), a request above its limit (Kubernetes refuses the pod), or a node selector
  the runner refuses (`ci-training-evil` is not `ci-training`).
A violation in an inherited value is reported once, where the value is defined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from infra.config.pools import POOL_NAME_LABEL
from infra.model import Platform, Runner, derive
from infra.quantity import QuantityError
from infra.render.ci_templates import render_ci_templates
from infra.routing import (
    JOB_RESOURCES,
    NODE_SELECTOR_PREFIX,
    JobResource,
    Quantity,
    magnitude,
    parse_quantity,
)

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec

GLOBAL_KEYWORDS = frozenset(
    {
        "default",
        "include",
        "stages",
        "variables",
        "workflow",
        "image",
        "services",
        "cache",
        "before_script",
        "after_script",
        "spec",
        "types",
    }
)
"""Top-level keys that are not jobs."""
TRAINING_TOKENS = frozenset({"train", "hyperopt"})
MAX_INCLUDE_DEPTH = 10
_TOKEN = re.compile(r"[^a-z0-9]+")
_VARIABLE_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class Reference(list):
    """GitLab's `!reference [job, key]` tag: kept opaque (its value is only known to GitLab)."""


class _GitlabLoader(yaml.SafeLoader):
    """SafeLoader that accepts GitLab's `!reference` tag."""


_GitlabLoader.add_constructor("!reference", lambda loader, node: Reference(loader.construct_sequence(node, deep=True)))


@dataclass(frozen=True)
class Violation:
    """One thing GitLab or the runner would refuse or misroute: `file: job: message`."""

    file: str
    job: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.job}: {self.message}" if self.job else f"{self.file}: {self.message}"


@dataclass
class CheckResult:
    violations: list[Violation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    jobs_checked: int = 0

    def add(self, violation: Violation) -> None:
        if violation not in self.violations:
            self.violations.append(violation)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


@dataclass
class _Pipeline:
    """The merged top level: jobs (before extends) with the file each came from, and globals."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    variable_origin: dict[str, str] = field(default_factory=dict)
    default: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Resolved:
    """A job after `extends`: its keys, the templates it extends, and where each variable was set."""

    job: dict[str, Any]
    ancestors: list[str]
    variable_origin: dict[str, tuple[str, str]]


def check_pipeline(path: Path, spec: PlatformSpec, root: Path | None = None) -> CheckResult:
    """Check the pipeline file `path` (local includes relative to `root`, default: its directory)."""
    checker = _Checker(spec, root or path.parent)
    checker.load(path, depth=0)
    checker.check_jobs()
    return checker.result


def _read_yaml(text: str) -> Any:
    documents = [d for d in yaml.load_all(text, Loader=_GitlabLoader) if d is not None]
    if len(documents) == 2 and isinstance(documents[0], dict) and set(documents[0]) == {"spec"}:
        return documents[1]  # a `spec: inputs:` header document, then the configuration
    return documents[0] if documents else {}


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """GitLab's merge for `extends` and `include`: hashes merge key by key; anything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _value(raw: Any) -> str | None:
    """A variable's value as a string, or None when GitLab alone knows it."""
    if isinstance(raw, dict):
        raw = raw.get("value")
    if raw is None or isinstance(raw, (list, dict)):
        return None  # includes !reference
    if isinstance(raw, bool):
        return str(raw).lower()
    return str(raw)


def _expand(raw: Any, variables: dict[str, Any], depth: int = 5) -> str | None:
    """The value with `$NAME` / `${NAME}` replaced from the job's variables, as GitLab does before the runner."""
    value = _value(raw)
    if value is None:
        return None

    def substitute(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        known = _value(variables[name]) if name in variables else None
        return match[0] if known is None else known

    for _ in range(depth):
        expanded = _VARIABLE_REF.sub(substitute, value)
        if expanded == value:
            break
        value = expanded
    return value


@dataclass(frozen=True)
class _Job:
    """A job as the runner would get it: merged keys, templates extended, variables and where each was set."""

    name: str
    file: str
    resolved: _Resolved
    variables: dict[str, Any]
    origin: dict[str, tuple[str, str]]
    tags: list[str]
    runner: Runner | None
    """The gpu-ci runner that takes the job (GitLab: one holding all its tags), None if none does."""

    @property
    def on_runner(self) -> bool:
        return self.runner is not None

    def where(self, variable: str) -> tuple[str, str]:
        """(file, job or `variables`) that set the variable: an inherited value is reported where defined."""
        return self.origin.get(variable, (self.file, self.name))


class _Checker:
    """Reads the pipeline (includes, extends) and checks its jobs against the runner's limits."""

    def __init__(self, spec: PlatformSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self.platform: Platform = derive(spec)
        self.pipeline = _Pipeline()
        self.result = CheckResult()
        self.family_profile = {family: name for name, p in spec.profiles.items() for family in p.families}

    def display(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def load(self, path: Path, depth: int) -> None:
        """Merge a file into the pipeline: its includes first, then its own keys (which win)."""
        shown = self.display(path)
        # A missing file here is the generated templates, not committed yet: what `pulumi up` will commit.
        text = path.read_text(encoding="utf-8") if path.exists() else render_ci_templates(self.platform)
        try:
            document = _read_yaml(text)
        except yaml.YAMLError as err:
            self.result.add(Violation(shown, None, f"not valid YAML ({str(err).splitlines()[0]})"))
            return
        if not isinstance(document, dict):
            self.result.add(Violation(shown, None, "not a GitLab CI configuration (the top level must be a mapping)"))
            return
        for include, from_platform in self.includes(document.get("include"), shown):
            if depth >= MAX_INCLUDE_DEPTH:
                self.result.add(Violation(shown, None, f"includes nest deeper than {MAX_INCLUDE_DEPTH} levels"))
                break
            if from_platform:  # the default branch's copy: what `pulumi up` committed from this spec
                self.merge(_read_yaml(render_ci_templates(self.platform)), include)
                continue
            targets = self.local_targets(include)
            if not targets:
                self.result.add(Violation(shown, None, f"include {include!r}: no such file in the repository"))
            for target in targets:
                self.load(target, depth + 1)
        self.merge(document, shown)

    def merge(self, document: dict[str, Any], shown: str) -> None:
        pipeline = self.pipeline
        for key, value in document.items():
            if key == "variables" and isinstance(value, dict):
                pipeline.variables.update(value)
                pipeline.variable_origin.update(dict.fromkeys(value, shown))
            elif key == "default" and isinstance(value, dict):
                pipeline.default = _deep_merge(pipeline.default, value)
            elif key not in GLOBAL_KEYWORDS and isinstance(value, dict):
                pipeline.jobs[key] = _deep_merge(pipeline.jobs.get(key, {}), value)
                pipeline.origin[key] = shown

    def includes(self, value: Any, shown: str) -> Iterator[tuple[str, bool]]:
        """(path, from_platform) of each include that can be read offline: local files, and the training
        project's own templates file included by `project:` (read as the platform commits it). Other kinds
        are only reported."""
        entries = value if isinstance(value, list) else [] if value is None else [value]
        for entry in entries:
            if isinstance(entry, str) and entry.startswith(("http://", "https://")):
                self.result.warn(f"{shown}: include {entry!r} is remote: not checked")
            elif isinstance(entry, str):
                yield entry, False
            elif isinstance(entry, dict) and "local" in entry:
                yield str(entry["local"]), False
            elif isinstance(entry, dict) and self.is_platform_templates(entry):
                yield self.spec.ci.templates_path, True
            elif isinstance(entry, dict):
                kind = next((k for k in ("project", "remote", "template", "component") if k in entry), "unknown")
                self.result.warn(f"{shown}: {kind} include {entry.get(kind)!r} cannot be read offline: not checked")

    def is_platform_templates(self, entry: dict[str, Any]) -> bool:
        """`include: {project: <training project>, file: <templates path>}`: what gpu-ci commits there."""
        files = entry.get("file")
        files = [files] if isinstance(files, str) else files or []
        paths = {str(f).lstrip("/") for f in files}
        return entry.get("project") == self.spec.gitlab.project and paths == {self.spec.ci.templates_path}

    def local_targets(self, include: str) -> list[Path]:
        """Files a local include names (wildcards expanded); the templates file counts even if not committed."""
        relative = include.lstrip("/")
        if "*" in relative:
            return sorted(p for p in self.root.glob(relative) if p.is_file())
        target = self.root / PurePosixPath(relative)
        return [target] if target.is_file() or relative == self.spec.ci.templates_path else []

    def resolve(self, name: str, stack: tuple[str, ...] = ()) -> _Resolved | None:
        """The job merged with what it extends (depth first, in order), or None if GitLab would refuse it."""
        job, where = self.pipeline.jobs[name], self.pipeline.origin[name]
        parents = job.get("extends") or []
        parents = [parents] if isinstance(parents, str) else list(parents)
        merged: dict[str, Any] = {}
        ancestors: list[str] = []
        origin: dict[str, tuple[str, str]] = {}
        for parent in parents:
            if parent in stack or parent == name:
                self.result.add(Violation(where, name, f"extends {parent}, which extends it back (a cycle)"))
                return None
            if parent not in self.pipeline.jobs:
                self.result.add(Violation(where, name, f"extends {parent}, which is defined nowhere"))
                return None
            resolved = self.resolve(parent, (*stack, name))
            if resolved is None:
                return None
            merged = _deep_merge(merged, resolved.job)
            ancestors += [parent, *resolved.ancestors]
            origin.update(resolved.variable_origin)
        own = {k: v for k, v in job.items() if k != "extends"}
        for variable in own.get("variables") or {}:
            origin[variable] = (where, name)
        return _Resolved(_deep_merge(merged, own), ancestors, origin)

    def job(self, name: str, resolved: _Resolved) -> _Job:
        pipeline = self.pipeline
        inherit = (resolved.job.get("inherit") or {}).get("variables", True)
        inherited = set(pipeline.variables) if inherit is True else set(inherit) if isinstance(inherit, list) else set()
        variables = {k: v for k, v in pipeline.variables.items() if k in inherited}
        origin = {k: (pipeline.variable_origin[k], "variables") for k in variables}
        variables.update(resolved.job.get("variables") or {})
        origin.update(resolved.variable_origin)
        tags = resolved.job.get("tags", pipeline.default.get("tags")) or []
        tags = [str(t) for t in tags] if isinstance(tags, list) else []
        takers = self.platform.runners_taking(tags)
        runner = takers[0] if len(takers) == 1 else None
        return _Job(name, pipeline.origin[name], resolved, variables, origin, tags, runner)

    def check_jobs(self) -> None:
        for name in self.pipeline.jobs:
            if name.startswith("."):
                continue  # hidden: a template, checked through the jobs that extend it
            resolved = self.resolve(name)
            if resolved is None:
                continue
            self.result.jobs_checked += 1
            job = self.job(name, resolved)
            tokens = set(_TOKEN.split(name.lower()))
            families = sorted(tokens & set(self.family_profile))
            if families and (tokens & TRAINING_TOKENS or resolved.job.get("stage") == self.spec.ci.stage):
                self.check_routing(job, families)
            if job.on_runner:
                self.check_resources(job)
                self.check_selectors(job)

    def check_routing(self, job: _Job, families: list[str]) -> None:
        """A family's job extends its profile's template, reaches the runner and stays on the profile's pool."""
        profiles = sorted({self.family_profile[f] for f in families})
        if len(profiles) > 1:
            named = ", ".join(f"{f} ({self.family_profile[f]})" for f in families)
            self.result.add(Violation(job.file, job.name, f"names model families of several profiles: {named}"))
            return
        profile_name, family = profiles[0], families[0]
        profile = self.spec.profiles[profile_name]
        if profile.template not in job.resolved.ancestors:
            extended = ", ".join(job.resolved.ancestors) or "no template"
            self.result.add(
                Violation(
                    job.file,
                    job.name,
                    f"extends {extended}, not {profile.template}: {family} jobs run with profile {profile_name} "
                    f"on pool {profile.pool}",
                )
            )
            return
        profile_tags = self.platform.profiles[profile_name].tags
        if job.runner is None:
            self.result.add(
                Violation(
                    job.file,
                    job.name,
                    f"tags {job.tags} are held by no gpu-ci runner (the template's are {list(profile_tags)}): "
                    "no gpu-ci runner takes it",
                )
            )
            return
        selectors = [
            _expand(raw, job.variables) for key, raw in job.variables.items() if key.startswith(NODE_SELECTOR_PREFIX)
        ]
        if any(value is None or not job.runner.admits_node_selector(value) for value in selectors):
            return  # refused or unknown: reported by check_selectors
        pools = {_pool_of(value) for value in selectors if value is not None} - {None}
        if len(pools) > 1:
            self.result.add(
                Violation(job.file, job.name, f"selects several pools: {', '.join(sorted(map(str, pools)))}")
            )
            return
        pool = next(iter(pools)) if pools else job.runner.pool
        if pool != profile.pool:
            self.result.add(
                Violation(
                    job.file,
                    job.name,
                    f"runs on pool {pool}, but {family} jobs belong on {profile.pool} (profile {profile_name})",
                )
            )

    def check_resources(self, job: _Job) -> None:
        """Each override within the runner's maximum, and each request within its limit."""
        effective: dict[str, Quantity | None] = {}
        for resource in JOB_RESOURCES:
            if resource.variable not in job.variables:
                effective[resource.field] = job.runner.defaults[resource.field] if job.runner else None
                continue
            effective[resource.field] = self.override(job, resource)
        for kind in ("cpu", "memory"):
            request, limit = effective[f"{kind}_request"], effective[f"{kind}_limit"]
            if request is not None and limit is not None and magnitude(request) > magnitude(limit):
                self.result.add(
                    Violation(
                        job.file,
                        job.name,
                        f"{kind} request {request.text} is above its limit {limit.text}: Kubernetes refuses the pod",
                    )
                )

    def override(self, job: _Job, resource: JobResource) -> Quantity | None:
        """The job's value of one resource variable, checked against the runner's maximum."""
        file, definer = job.where(resource.variable)
        text = _expand(job.variables[resource.variable], job.variables)
        if text is None or "$" in text:
            self.result.warn(f"{file}: {definer}: {resource.variable} is only known to GitLab: not checked")
            return None
        try:
            quantity = parse_quantity(resource.kind, text)
        except QuantityError as err:
            self.result.add(Violation(file, definer, f"{resource.variable}={text!r}: {err}"))
            return None
        assert job.runner is not None  # resources are checked on jobs a runner takes
        maximum = job.runner.maxima[resource.field]
        if magnitude(quantity) > magnitude(maximum):
            self.result.add(
                Violation(
                    file,
                    definer,
                    f"{resource.variable}={text} is above the runner's {resource.max_key}={maximum.text}: "
                    "the job would fail",
                )
            )
        return quantity

    def check_selectors(self, job: _Job) -> None:
        """Node selectors the runner admits; other KUBERNETES_* overrides are ignored by it (a warning)."""
        resources = {r.variable for r in JOB_RESOURCES}
        for key, raw in sorted(job.variables.items()):
            if not key.startswith("KUBERNETES_") or key in resources:
                continue
            file, definer = job.where(key)
            if not key.startswith(NODE_SELECTOR_PREFIX):
                self.result.warn(f"{file}: {definer}: {key} is ignored: the runner allows no such override")
                continue
            value = _expand(raw, job.variables)
            if value is None or "$" in value:
                self.result.warn(f"{file}: {definer}: {key} is only known to GitLab: not checked")
            elif job.runner is not None and not job.runner.admits_node_selector(value):
                self.result.add(
                    Violation(
                        file,
                        definer,
                        f"{key}={value} is refused by the runner (node_selector_overwrite_allowed="
                        f"{job.runner.node_selector_regex}): the job would fail",
                    )
                )


def _pool_of(selector_value: str) -> str | None:
    """The pool a `k8s.scaleway.com/pool-name=<pool>` value selects (None for another label)."""
    key, _, value = selector_value.partition("=")
    return value if key == POOL_NAME_LABEL else None
