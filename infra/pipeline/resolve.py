"""Load and resolve a `.gitlab-ci.yml` as GitLab does, offline (pure: no Pulumi import).

GitLab builds a pipeline's configuration in a fixed order, followed here:
1. YAML, with GitLab's `!reference` tag (and a `spec:` header document, skipped);
2. `include:`s, depth first: each included file is deep-merged in order over the previous ones, and the
   including file's own keys are merged last (they win). Local files (`local:`, plain strings, `*`/`**`
   wildcards) are read from the checkout; the platform's templates (`project:` + its templates path) are
   the ones the platform commits, rendered from the spec by the caller;
3. `extends:`, several parents, up to 11 levels: hashes merge key by key, anything else is replaced,
   later parents win and the job's own keys win over all;
4. `!reference [job, key, ...]` anywhere, on the extended configuration, nested up to 10 levels;
5. `.pre` and `.post` around the stages (default stages: build, test, deploy);
then, per job, `default:` (and the legacy top-level image/services/cache/before_script/after_script)
under `inherit: default:`, and the global variables under `inherit: variables:`.

What GitLab would refuse (an unknown `extends` parent, a stage that does not exist, a missing local
include...) is recorded as a `Violation`. What cannot be resolved offline at all (an include of another
project, an unknown `!reference` target, a reference cycle, YAML that does not parse, a top level that
is not a mapping) raises `ResolveError`, whose message is one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

DEFAULT_STAGES = ("build", "test", "deploy")
EDGE_STAGES = (".pre", ".post")
DEFAULT_JOB_STAGE = "test"
GLOBAL_KEYWORDS = frozenset(
    {
        "default",
        "include",
        "stages",
        "types",
        "variables",
        "workflow",
        "spec",
        "image",
        "services",
        "cache",
        "before_script",
        "after_script",
    }
)
"""Top-level keys that are not jobs."""
LEGACY_DEFAULTS = ("image", "services", "cache", "before_script", "after_script")
"""Top-level keys GitLab still reads as `default:` ones."""
DEFAULT_KEYWORDS = frozenset(
    {
        "after_script",
        "artifacts",
        "before_script",
        "cache",
        "hooks",
        "id_tokens",
        "image",
        "interruptible",
        "retry",
        "services",
        "tags",
        "timeout",
    }
)
"""What `default:` may set (and `inherit: default:` may name)."""
SCRIPT_KEYS = ("before_script", "script", "after_script")
"""Arrays GitLab flattens (nested arrays from `!reference` become one list of commands)."""
MAX_EXTENDS_DEPTH = 11
MAX_REFERENCE_DEPTH = 10
MAX_INCLUDE_DEPTH = 100
MAX_INCLUDES = 150


class ResolveError(ValueError):
    """A construct check-ci cannot resolve offline; the message is one line."""


class Reference(list):
    """GitLab's `!reference [job, key, ...]`, resolved after `extends`."""


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it


class _GitlabLoader(_SafeLoader):
    """SafeLoader that accepts GitLab's `!reference` tag."""


def _reference(loader: Any, node: yaml.Node) -> Reference:
    if not isinstance(node, yaml.SequenceNode):
        raise yaml.constructor.ConstructorError(
            None, None, "!reference must be a list like [job, key]", node.start_mark
        )
    return Reference(loader.construct_sequence(node, deep=True))


_GitlabLoader.add_constructor("!reference", _reference)


@dataclass(frozen=True)
class Violation:
    """One thing GitLab or the runner would refuse or misroute: `file: job: message`."""

    file: str
    job: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.job}: {self.message}" if self.job else f"{self.file}: {self.message}"


@dataclass(frozen=True)
class PlatformTemplates:
    """The templates the platform commits to the training project: an `include: project:` of them is
    read from here (rendered from the spec) instead of from GitLab."""

    project: str
    path: str
    branch: str
    """Where the platform commits them (its templates branch, else the project's default branch)."""
    text: str


@dataclass
class ResolvedJob:
    """A job as GitLab would hand it to a runner."""

    name: str
    file: str
    """The file that defines it (the last one to set any of its keys)."""
    keys: dict[str, Any]
    """Final keys: extends merged, references resolved, defaults applied."""
    templates: tuple[str, ...]
    """Jobs it extends (depth first) and jobs it takes values from by `!reference`."""
    variables: dict[str, Any]
    """Global variables it inherits, then its own (its own win)."""
    variable_origin: dict[str, tuple[str, str]]
    """Variable -> (file, job or `variables`) where its value is written."""
    stage: str
    tags: tuple[str, ...]
    problems: list[Violation] = field(default_factory=list)
    complete: bool = True
    """False when GitLab could not even build the job (its `extends` fails)."""

    def where(self, variable: str) -> tuple[str, str]:
        """Where the variable is set: an inherited value is reported where it is written."""
        return self.variable_origin.get(variable, (self.file, self.name))


@dataclass
class ResolvedPipeline:
    jobs: dict[str, ResolvedJob]
    """Visible jobs, in the order GitLab lists them."""
    stages: tuple[str, ...]
    variables: dict[str, Any]
    problems: list[Violation] = field(default_factory=list)
    """Refusals that belong to no job (a missing include, malformed `stages`)."""
    warnings: list[str] = field(default_factory=list)


# --- YAML ----------------------------------------------------------------------------------------------


def read_yaml(text: str, shown: str) -> Any:
    """One configuration document; a `spec: inputs:` header document before it is skipped."""
    try:
        documents = [d for d in yaml.load_all(text, Loader=_GitlabLoader) if d is not None]
    except yaml.YAMLError as err:
        problem = str(getattr(err, "problem", None) or str(err).splitlines()[0])
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ResolveError(f"{shown}: not valid YAML: {problem}{where}") from None
    except RecursionError:
        raise ResolveError(f"{shown}: YAML nests too deep") from None
    if len(documents) == 2 and isinstance(documents[0], dict) and set(documents[0]) == {"spec"}:
        return documents[1]
    if len(documents) > 1:
        raise ResolveError(f"{shown}: {len(documents)} YAML documents; GitLab reads one (after a spec: header)")
    return documents[0] if documents else {}


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """GitLab's merge for `include` and `extends`: hashes merge key by key, anything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# --- includes ------------------------------------------------------------------------------------------


@dataclass
class _Layer:
    """Merged configuration and which file set each top-level key and each variable."""

    config: dict[str, Any] = field(default_factory=dict)
    key_file: dict[str, str] = field(default_factory=dict)
    variable_file: dict[tuple[str, str], str] = field(default_factory=dict)
    """(top-level key, variable) -> file; `variables` is the global block."""

    def merge(self, other: _Layer) -> None:
        self.config = deep_merge(self.config, other.config)
        self.key_file.update(other.key_file)
        self.variable_file.update(other.variable_file)

    @classmethod
    def of(cls, document: dict[str, Any], shown: str) -> _Layer:
        layer = cls({k: v for k, v in document.items() if k != "include"})
        for raw_key, value in layer.config.items():
            key = str(raw_key)
            layer.key_file[key] = shown
            variables = value.get("variables") if isinstance(value, dict) and key != "variables" else value
            if key in GLOBAL_KEYWORDS - {"variables"}:
                continue
            if isinstance(variables, dict):
                for name in variables:
                    layer.variable_file[(key, str(name))] = shown
        return layer


class _Includes:
    """Reads a file and what it includes, depth first, into one `_Layer`."""

    def __init__(self, root: Path, platform: PlatformTemplates | None, pipeline: ResolvedPipeline) -> None:
        self.root = root
        self.platform = platform
        self.pipeline = pipeline
        self.count = 0

    def display(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def load(self, text: str, shown: str, stack: tuple[str, ...]) -> _Layer:
        document = read_yaml(text, shown)
        if not isinstance(document, dict):
            raise ResolveError(f"{shown}: not a GitLab CI configuration (the top level must be a mapping)")
        layer = _Layer()
        for kind, target in self.entries(document.get("include"), shown):
            self.count += 1
            if self.count > MAX_INCLUDES or len(stack) >= MAX_INCLUDE_DEPTH:
                self.problem(shown, f"more than {MAX_INCLUDES} includes or {MAX_INCLUDE_DEPTH} nested: GitLab refuses")
                break
            if kind == "platform":
                assert self.platform is not None
                layer.merge(self.load(self.platform.text, target, (*stack, target)))
                continue
            paths = self.local_targets(target)
            if not paths:
                self.problem(shown, f"include {target!r}: no such file in the repository")
            for path in paths:
                name = self.display(path)
                if name in stack:
                    self.problem(shown, f"include {target!r} includes this file back (a cycle): GitLab refuses")
                    continue
                layer.merge(self.load(self.read(path, name), name, (*stack, name)))
        layer.merge(_Layer.of(document, shown))
        return layer

    def read(self, path: Path, shown: str) -> str:
        """A local file; the platform's templates path when not committed yet: what the platform commits."""
        if not path.is_file():
            return self.platform.text if self.platform else ""
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ResolveError(f"{shown}: cannot be read ({err.__class__.__name__})") from None

    def problem(self, shown: str, message: str) -> None:
        violation = Violation(shown, None, message)
        if violation not in self.pipeline.problems:
            self.pipeline.problems.append(violation)

    def entries(self, value: Any, shown: str) -> Iterator[tuple[str, str]]:
        """("local", path) or ("platform", path) per included file; any other kind cannot be read offline."""
        if value is None:
            return
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            if isinstance(entry, str) and entry.startswith(("http://", "https://")):
                raise ResolveError(f"{shown}: remote include {entry!r} cannot be read offline (try --online)")
            if isinstance(entry, str):
                yield "local", entry
            elif isinstance(entry, dict) and isinstance(entry.get("local"), str):
                yield "local", entry["local"]
            elif isinstance(entry, dict) and "project" in entry:
                yield from self.project_files(entry, shown)
            elif isinstance(entry, dict):
                kind = next((k for k in ("remote", "template", "component") if k in entry), None)
                if kind is None:
                    raise ResolveError(f"{shown}: include {entry!r} is no include GitLab knows")
                raise ResolveError(f"{shown}: {kind} include {entry[kind]!r} cannot be read offline (try --online)")
            else:
                raise ResolveError(f"{shown}: include {entry!r} is no include GitLab knows")

    def project_files(self, entry: dict[str, Any], shown: str) -> Iterator[tuple[str, str]]:
        """The platform's templates file, read as the platform commits it; another project's files fail."""
        files = entry.get("file")
        files = [files] if isinstance(files, str) else files if isinstance(files, list) else []
        platform = self.platform
        for name in files or [None]:
            path = str(name).lstrip("/") if name is not None else None
            if platform is None or entry["project"] != platform.project or path != platform.path:
                raise ResolveError(
                    f"{shown}: project include {entry['project']!r} file {name!r} cannot be read offline (try --online)"
                )
            ref = entry.get("ref")
            if ref is not None and str(ref) != platform.branch:
                self.pipeline.warnings.append(
                    f"{shown}: include of {platform.project}:{platform.path} pins ref {ref!r}, but the platform "
                    f"commits its templates to {platform.branch!r}: checked against the current templates, "
                    "which that ref may not hold"
                )
            yield "platform", platform.path

    def local_targets(self, include: str) -> list[Path]:
        """Files a local include names (`*` within a folder, `**` across folders); the platform's templates
        path counts even when not committed yet (what the platform will commit)."""
        relative = include.lstrip("/")
        if not relative or ".." in PurePosixPath(relative).parts:
            return []
        if "*" in relative:
            pattern = re.compile(
                "".join(
                    ".*" if part == "**" else "[^/]*" if part == "*" else re.escape(part)
                    for part in re.split(r"(\*\*|\*)", relative)
                )
                + r"\Z"
            )
            files = (p for p in self.root.rglob("*") if p.is_file() and ".git" not in p.parts)
            return sorted(p for p in files if pattern.match(p.relative_to(self.root).as_posix()))
        target = self.root / PurePosixPath(relative)
        if target.is_file() or (self.platform is not None and relative == self.platform.path):
            return [target]
        return []


# --- extends -------------------------------------------------------------------------------------------


@dataclass
class _Extended:
    job: dict[str, Any]
    ancestors: list[str]
    variable_origin: dict[str, tuple[str, str]]
    problems: list[Violation]
    complete: bool


class _Extends:
    """`extends:` over the merged configuration, memoised per key."""

    def __init__(self, layer: _Layer) -> None:
        self.layer = layer
        self.done: dict[str, _Extended] = {}

    def own_origin(self, name: str, job: dict[str, Any]) -> dict[str, tuple[str, str]]:
        variables = job.get("variables")
        if not isinstance(variables, dict):
            return {}
        file = self.layer.key_file.get(name, "?")
        return {str(v): (self.layer.variable_file.get((name, str(v)), file), name) for v in variables}

    def extend(self, name: str, stack: tuple[str, ...] = ()) -> _Extended:
        if name in self.done:
            return self.done[name]
        job = self.layer.config[name]
        where = self.layer.key_file.get(name, "?")
        raw = job.get("extends")
        parents = [raw] if isinstance(raw, str) else raw if raw is not None else []
        own = dict(job)
        result = _Extended({}, [], {}, [], True)
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            result.problems.append(Violation(where, name, "extends: not a job name or a list of job names"))
            result.complete = False
            parents = []
        elif len(stack) >= MAX_EXTENDS_DEPTH:
            result.problems.append(Violation(where, name, f"extends nests deeper than {MAX_EXTENDS_DEPTH} levels"))
            result.complete = False
            parents = []
        for parent in parents:
            if parent == name or parent in stack:
                result.problems.append(Violation(where, name, f"extends {parent}, which extends it back (a cycle)"))
                result.complete = False
                break
            if parent not in self.layer.config or parent in GLOBAL_KEYWORDS:
                result.problems.append(Violation(where, name, f"extends {parent}, which is defined nowhere"))
                result.complete = False
                break
            if not isinstance(self.layer.config[parent], dict):
                result.problems.append(Violation(where, name, f"extends {parent}, which is not a job"))
                result.complete = False
                break
            base = self.extend(parent, (*stack, name))
            result.problems += [p for p in base.problems if p not in result.problems]
            if not base.complete:
                result.complete = False
                break
            result.job = deep_merge(result.job, base.job)
            result.ancestors += [parent, *base.ancestors]
            result.variable_origin.update(base.variable_origin)
        result.job = deep_merge(result.job, own)
        result.variable_origin.update(self.own_origin(name, job))
        if not stack:
            self.done[name] = result
        return result


# --- !reference ----------------------------------------------------------------------------------------


class _References:
    """Resolves `!reference` tags against the extended configuration (GitLab's order)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def resolve(self, value: Any, depth: int = 0, chain: tuple[tuple[str, ...], ...] = ()) -> Any:
        if isinstance(value, Reference):
            return self.follow(value, depth, chain)
        if isinstance(value, dict):
            return {k: self.resolve(v, depth, chain) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, depth, chain) for v in value]
        return value

    def target(self, reference: Reference) -> tuple[tuple[str, ...], Any]:
        shown = "!reference [" + ", ".join(str(part) for part in reference) + "]"
        if not reference or not all(isinstance(part, str) for part in reference):
            raise ResolveError(f"{shown}: a reference is a list of names like [job, key]")
        node: Any = self.config
        for part in reference:
            if not isinstance(node, dict) or part not in node:
                raise ResolveError(f"{shown} could not be found")
            node = node[part]
        return tuple(reference), node

    def follow(self, reference: Reference, depth: int, chain: tuple[tuple[str, ...], ...]) -> Any:
        path, node = self.target(reference)
        shown = "!reference [" + ", ".join(path) + "]"
        if any(c[: len(path)] == path for c in chain):  # its target holds the reference being resolved
            raise ResolveError(f"{shown} is part of a circular chain of references")
        if depth >= MAX_REFERENCE_DEPTH:
            raise ResolveError(f"{shown}: references nest deeper than {MAX_REFERENCE_DEPTH} levels")
        return self.resolve(node, depth + 1, (*chain, path))


def _flatten(value: Any) -> Any:
    """A script-like array as GitLab runs it: nested arrays (from references) become one list."""
    if not isinstance(value, list):
        return value
    flat: list[Any] = []
    for item in value:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat


def _flatten_rules(value: Any) -> Any:
    """`rules:` take one level of nesting (a `!reference` to another job's rules)."""
    if not isinstance(value, list):
        return value
    return [rule for item in value for rule in (item if isinstance(item, list) else [item])]


# --- the pipeline --------------------------------------------------------------------------------------


def resolve_file(path: Path, root: Path | None = None, platform: PlatformTemplates | None = None) -> ResolvedPipeline:
    """Read `path` (local includes relative to `root`, default: its directory) and resolve it."""
    root = root or path.parent
    pipeline = ResolvedPipeline({}, (), {})
    includes = _Includes(root, platform, pipeline)
    shown = includes.display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ResolveError(f"{shown}: cannot be read ({err.__class__.__name__})") from None
    try:
        layer = includes.load(text, shown, (shown,))
        return _build(layer, pipeline, shown)
    except RecursionError:
        raise ResolveError(f"{shown}: the configuration nests too deep to resolve") from None


def resolve_text(text: str, shown: str) -> ResolvedPipeline:
    """Resolve a configuration without includes (GitLab's merged YAML, from `--online`)."""
    pipeline = ResolvedPipeline({}, (), {})
    document = read_yaml(text, shown)
    if not isinstance(document, dict):
        raise ResolveError(f"{shown}: not a GitLab CI configuration (the top level must be a mapping)")
    document = _unsymbol(document)
    try:
        return _build(_Layer.of(document, shown), pipeline, shown)
    except RecursionError:
        raise ResolveError(f"{shown}: the configuration nests too deep to resolve") from None


def _unsymbol(value: Any) -> Any:
    """GitLab's merged YAML may write keys as Ruby symbols (`:job:`, `:".hidden":`): plain names."""
    if isinstance(value, dict):
        return {
            (k[1:].strip('"') if isinstance(k, str) and k.startswith(":") else k): _unsymbol(v)
            for k, v in value.items()
        }
    if isinstance(value, list) and not isinstance(value, Reference):
        return [_unsymbol(v) for v in value]
    return value


def _build(layer: _Layer, pipeline: ResolvedPipeline, root_file: str) -> ResolvedPipeline:
    extends = _Extends(layer)
    extended: dict[str, _Extended] = {}
    config: dict[str, Any] = {}
    for key, value in layer.config.items():
        if isinstance(key, str) and key not in GLOBAL_KEYWORDS and isinstance(value, dict):
            extended[key] = extends.extend(key)
            config[key] = extended[key].job
        else:
            config[key] = value
    references = _References(config)
    resolved: dict[Any, Any] = {}
    for key, value in config.items():
        try:
            resolved[key] = references.resolve(value)
        except ResolveError as err:
            raise ResolveError(f"{layer.key_file.get(str(key), root_file)}: {key}: {err}") from None

    def global_problem(message: str) -> None:
        pipeline.problems.append(Violation(root_file, None, message))

    pipeline.stages = _stages(resolved, global_problem)
    variables = resolved.get("variables", {})
    if not isinstance(variables, dict):
        global_problem("variables: not a mapping of names to values")
        variables = {}
    pipeline.variables = {str(k): v for k, v in variables.items()}
    global_origin = {
        name: (layer.variable_file.get(("variables", name), layer.key_file.get("variables", root_file)), "variables")
        for name in pipeline.variables
    }
    global_origin.update(_reference_origins(layer.config.get("variables"), extended, layer))
    defaults = _defaults(resolved, global_problem)

    for name, value in resolved.items():
        if not isinstance(name, str) or name in GLOBAL_KEYWORDS or name.startswith("."):
            continue
        file = layer.key_file.get(name, root_file)
        if not isinstance(value, dict):
            pipeline.problems.append(Violation(file, name, "not a job: GitLab wants a mapping of keywords"))
            continue
        # A job written as a whole `!reference` was no mapping when GitLab applied `extends`.
        base = extended.get(name) or _Extended({}, [], {}, [], True)
        job = _job(name, file, value, base, pipeline=pipeline, defaults=defaults, global_origin=global_origin)
        raw_variables = base.job.get("variables")  # extended, references not yet resolved
        job.variable_origin.update(
            {k: v for k, v in _reference_origins(raw_variables, extended, layer).items() if k in job.variables}
        )
        used = _references_of(layer.config[name]) - {name}
        job.templates = (*base.ancestors, *sorted(used - set(base.ancestors)))
        pipeline.jobs[name] = job
    return pipeline


def _references_of(job: Any) -> set[str]:
    """Jobs a job's own keys `!reference` (directly)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Reference):
            if value and isinstance(value[0], str):
                found.add(value[0])
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(job)
    return found


def _reference_origins(raw: Any, extended: dict[str, _Extended], layer: _Layer) -> dict[str, tuple[str, str]]:
    """Where variables taken by `!reference [job, variables(, NAME)]` are written: in that job."""
    origins: dict[str, tuple[str, str]] = {}

    def origin_in(job: str, variable: str) -> tuple[str, str] | None:
        if job in extended:
            return extended[job].variable_origin.get(variable)
        if job == "variables":
            return (layer.variable_file.get(("variables", variable), layer.key_file.get("variables", "?")), "variables")
        return None

    if isinstance(raw, Reference) and len(raw) == 2 and raw[1] == "variables" and isinstance(raw[0], str):
        source = extended.get(raw[0])
        block = source.job.get("variables") if source is not None else None
        for variable in block if isinstance(block, dict) else {}:
            if (found := origin_in(raw[0], str(variable))) is not None:
                origins[str(variable)] = found
    elif isinstance(raw, dict):
        for variable, value in raw.items():
            # Reported where written only when it is the same variable there (else: where it is used).
            same = isinstance(value, Reference) and len(value) == 3 and value[1] == "variables"
            if same and value[2] == variable and isinstance(value[0], str):
                found = origin_in(value[0], value[2])
                if found is not None:
                    origins[str(variable)] = found
    return origins


def _stages(config: dict[str, Any], problem: Any) -> tuple[str, ...]:
    """The stages with `.pre` first and `.post` last, as GitLab injects them."""
    raw = config.get("stages", config.get("types"))
    if raw is None:
        raw = list(DEFAULT_STAGES)
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        problem("stages: not a list of stage names")
        raw = list(DEFAULT_STAGES)
    middle = [s for s in raw if s not in EDGE_STAGES]
    return (".pre", *dict.fromkeys(middle), ".post")


def _defaults(config: dict[str, Any], problem: Any) -> dict[str, Any]:
    """`default:` over the legacy top-level keywords."""
    defaults = {k: config[k] for k in LEGACY_DEFAULTS if k in config}
    default = config.get("default", {})
    if not isinstance(default, dict):
        problem("default: not a mapping of keywords")
        return defaults
    defaults.update({k: v for k, v in default.items() if k in DEFAULT_KEYWORDS})
    for key in SCRIPT_KEYS:
        if key in defaults:
            defaults[key] = _flatten(defaults[key])
    return defaults


def _inherit(value: Any, what: str, job: ResolvedJob) -> bool | set[str]:
    """`inherit: default:` / `inherit: variables:`: True, False or the names listed."""
    if value is None or isinstance(value, bool):
        return value is not False
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return set(value)
    job.problems.append(Violation(job.file, job.name, f"inherit: {what}: not true, false or a list of names"))
    return True


def _job(
    name: str,
    file: str,
    keys: dict[str, Any],
    base: _Extended,
    *,
    pipeline: ResolvedPipeline,
    defaults: dict[str, Any],
    global_origin: dict[str, tuple[str, str]],
) -> ResolvedJob:
    keys = dict(keys)
    job = ResolvedJob(name, file, keys, (), {}, {}, DEFAULT_JOB_STAGE, (), list(base.problems), base.complete)
    inherit = keys.get("inherit") or {}
    if not isinstance(inherit, dict):
        job.problems.append(Violation(file, name, "inherit: not a mapping (default:, variables:)"))
        inherit = {}
    inherit_default = _inherit(inherit.get("default"), "default", job)
    inherit_variables = _inherit(inherit.get("variables"), "variables", job)
    for key, value in defaults.items():
        if key not in keys and (
            inherit_default is True or (isinstance(inherit_default, set) and key in inherit_default)
        ):
            keys[key] = value
    for key in SCRIPT_KEYS:
        if key in keys:
            keys[key] = _flatten(keys[key])
    if "rules" in keys:
        keys["rules"] = _flatten_rules(keys["rules"])
    if not job.complete:
        return job  # GitLab stops at the failed `extends`: nothing else about the job is known
    if not any(k in keys for k in ("script", "run", "trigger")):
        job.problems.append(Violation(file, name, "has no script, run or trigger: GitLab refuses the pipeline"))

    own = keys.get("variables", {})
    if own is None:
        own = {}
    if not isinstance(own, dict):
        job.problems.append(Violation(file, name, "variables: not a mapping of names to values"))
        own = {}
    inherited = {
        k: v
        for k, v in pipeline.variables.items()
        if inherit_variables is True or (isinstance(inherit_variables, set) and k in inherit_variables)
    }
    job.variables = {**inherited, **{str(k): v for k, v in own.items()}}
    job.variable_origin = {k: global_origin[k] for k in inherited if k in global_origin}
    job.variable_origin.update({k: v for k, v in base.variable_origin.items() if k in own})

    _stage_and_tags(job, pipeline.stages)
    return job


def _stage_and_tags(job: ResolvedJob, stages: tuple[str, ...]) -> None:
    """The job's stage (one of the pipeline's) and its tags (names)."""
    stage = job.keys.get("stage", DEFAULT_JOB_STAGE)
    if not isinstance(stage, str):
        job.problems.append(Violation(job.file, job.name, "stage: not a stage name"))
    elif stage not in stages:
        job.problems.append(
            Violation(
                job.file,
                job.name,
                f"chosen stage {stage} does not exist; available stages are {', '.join(stages)}",
            )
        )
    job.stage = stage if isinstance(stage, str) else DEFAULT_JOB_STAGE
    tags = job.keys.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        job.problems.append(Violation(job.file, job.name, "tags: not a list of tag names"))
        tags = []
    job.tags = tuple(tags)
