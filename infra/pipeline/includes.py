"""`include:` as GitLab reads it, depth first, offline and within budgets (pure: no Pulumi import).

Each included file is deep-merged in order over the previous ones, and the including file's own keys are merged
last (they win). Local files (`local:`, plain strings, `*`/`**` wildcards) are read from the checkout; the
platform's templates (`project:` + its templates path) are the ones the platform commits, rendered from the spec.

Budgets (over one: `ResolveError`, one line naming the file and what was too much):
- `MAX_INCLUDES` files in all and `MAX_INCLUDE_DEPTH` levels (GitLab's own limits);
- `MAX_PIPELINE_VALUES` values in all the files together, aliases expanded (each file alone: `PIPELINE_FILE`);
- wildcards: the repository is walked once per folder a pattern names, `MAX_WALKED_ENTRIES` entries at most,
  and matched in linear time (`IncludePattern`), `MAX_GLOB_STEPS` characters at most.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from infra.pipeline.globs import IncludePattern
from infra.pipeline.keys import job_key_name, misread_key
from infra.pipeline.reading import read_counted, read_file
from infra.pipeline.resolved import (
    GLOBAL_KEYWORDS,
    PlatformTemplates,
    ResolvedPipeline,
    ResolveError,
    Violation,
    Work,
    brief,
    deep_merge,
)

MAX_INCLUDES = 150
"""GitLab's default `ci_max_includes`: included files in all, nested ones too."""
MAX_INCLUDE_DEPTH = 100
"""GitLab's limit on nested includes."""
MAX_PIPELINE_VALUES = 500_000
"""Values of the pipeline and all its includes together (aliases expanded); one file may hold 100,000."""
MAX_WALKED_ENTRIES = 50_000
"""Files and folders a wildcard include may walk (a training repository: a few hundred)."""
MAX_GLOB_STEPS = 5_000_000
"""Characters of repository paths the wildcard patterns may scan in all."""
MAX_PATTERN = 1024
"""Characters of one wildcard include."""


@dataclass
class Layer:
    """Merged configuration and which file set each top-level key and each variable."""

    config: dict[str, Any] = field(default_factory=dict)
    key_file: dict[str, str] = field(default_factory=dict)
    variable_file: dict[tuple[str, str], str] = field(default_factory=dict)
    """(top-level key, variable) -> file; `variables` is the global block."""
    misread: list[Violation] = field(default_factory=list)
    """A top-level key YAML reads as no string (`5:`, `3.10:`, `yes:`, `~:`): GitLab refuses the pipeline."""

    def merge(self, other: Layer, work: Work | None = None) -> None:
        self.config = deep_merge(self.config, other.config, work)
        self.key_file.update(other.key_file)
        self.variable_file.update(other.variable_file)
        self.misread += other.misread

    @classmethod
    def of(cls, document: dict[str, Any], shown: str) -> Layer:
        layer = cls({job_key_name(k): v for k, v in document.items() if k != "include"})
        for key in document:
            if (what := misread_key(key)) is not None:
                name = job_key_name(key)
                layer.misread.append(
                    Violation(
                        shown,
                        name if isinstance(name, str) else None,
                        f"YAML reads this top-level key as {what}, and GitLab takes only a string as a job's name "
                        '("name should be a symbol"): it refuses the pipeline; quote the key',
                    )
                )
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


class Includes:
    """Reads a file and what it includes, depth first, into one `Layer`."""

    def __init__(self, root: Path, platform: PlatformTemplates | None, pipeline: ResolvedPipeline, work: Work) -> None:
        self.root = root
        self.platform = platform
        self.pipeline = pipeline
        self.work = work
        self.files = 0
        self.values = 0
        self.walked = 0
        self.glob_steps = 0
        self.listings: dict[str, list[str]] = {}

    def display(self, path: Path) -> str:
        """`path` relative to the repository root (lexically first: resolving may be refused, `/proc/1/cwd`)."""
        try:
            return path.absolute().relative_to(self.root.absolute()).as_posix()
        except ValueError:
            pass
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except (OSError, RuntimeError, ValueError):
            return str(path)

    def load_file(self, path: Path) -> Layer:
        """The pipeline file `path` and everything it includes."""
        shown = self.display(path)
        return self.load(read_file(path, self.root, shown), shown, (shown,))

    def load(self, text: str, shown: str, stack: tuple[str, ...]) -> Layer:
        document, values = read_counted(text, shown)
        self.values += values
        if self.values > MAX_PIPELINE_VALUES:
            raise ResolveError(
                f"{shown}: the pipeline and its includes expand to more than {MAX_PIPELINE_VALUES:,} values: not "
                "resolved"
            )
        if not isinstance(document, dict):
            raise ResolveError(f"{shown}: not a GitLab CI configuration (the top level must be a mapping)")
        layer = Layer()
        for kind, target in self.entries(document.get("include"), shown):
            if kind == "platform":
                assert self.platform is not None
                layer.merge(self.included(self.platform.text, target, stack), self.work)
                continue
            names = self.local_targets(target, shown)
            if not names:
                self.problem(shown, f"include {brief(target)}: no such file in the repository")
            for name in names:
                if name in stack:
                    self.problem(shown, f"include {brief(target)} includes this file back (a cycle): GitLab refuses")
                    continue
                layer.merge(self.included(self.read(name), name, stack), self.work)
        layer.merge(Layer.of(document, shown), self.work)
        return layer

    def included(self, text: str, shown: str, stack: tuple[str, ...]) -> Layer:
        """One included file, counted against GitLab's limits."""
        self.files += 1
        if self.files > MAX_INCLUDES:
            raise ResolveError(f"{shown}: more than {MAX_INCLUDES} included files in all (GitLab's limit)")
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise ResolveError(f"{shown}: includes nest more than {MAX_INCLUDE_DEPTH} levels (GitLab's limit)")
        return self.load(text, shown, (*stack, shown))

    def read(self, name: str) -> str:
        """A local file; the platform's templates path when not committed yet: what the platform commits."""
        if not _exists(self.root / name, name) and self.platform is not None and name == self.platform.path:
            return self.platform.text
        return read_file(self.root / name, self.root, name)

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
                raise ResolveError(f"{shown}: remote include {brief(entry)} cannot be read offline (try --online)")
            if isinstance(entry, str):
                yield "local", entry
            elif isinstance(entry, dict) and isinstance(entry.get("local"), str):
                yield "local", entry["local"]
            elif isinstance(entry, dict) and "project" in entry:
                yield from self.project_files(entry, shown)
            elif isinstance(entry, dict):
                kind = next((k for k in ("remote", "template", "component") if k in entry), None)
                if kind is None:
                    raise ResolveError(f"{shown}: include {brief(entry)} is no include GitLab knows")
                what = f"{kind} include {brief(entry[kind])}"
                raise ResolveError(f"{shown}: {what} cannot be read offline (try --online)")
            else:
                raise ResolveError(f"{shown}: include {brief(entry)} is no include GitLab knows")

    def project_files(self, entry: dict[str, Any], shown: str) -> Iterator[tuple[str, str]]:
        """The platform's templates file, read as the platform commits it; another project's files fail."""
        files = entry.get("file")
        files = [files] if isinstance(files, str) else files if isinstance(files, list) else []
        platform = self.platform
        for name in files or [None]:
            path = str(name).lstrip("/") if name is not None else None
            if platform is None or entry["project"] != platform.project or path != platform.path:
                raise ResolveError(
                    f"{shown}: project include {brief(entry['project'])} file {brief(name)} cannot be read offline "
                    "(try --online)"
                )
            ref = entry.get("ref")
            if ref is not None and str(ref) != platform.branch:
                self.pipeline.warnings.append(
                    f"{shown}: include of {platform.project}:{platform.path} pins ref {brief(ref)}, but the "
                    f"platform commits its templates to {platform.branch!r}: checked against the current "
                    "templates, which that ref may not hold"
                )
            yield "platform", platform.path

    def local_targets(self, include: str, shown: str) -> list[str]:
        """Files a local include names, relative to the root (`*` within a folder, `**` across folders); the
        platform's templates path counts even when not committed yet (what the platform will commit)."""
        relative = include.lstrip("/")
        if not relative or ".." in PurePosixPath(relative).parts or "\0" in relative:
            return []
        if "*" in relative:
            return self.matching(relative, shown)
        name = PurePosixPath(relative).as_posix()
        if _exists(self.root / name, f"{shown}: include {brief(include)}") or (
            self.platform is not None and name == self.platform.path
        ):
            return [name]
        return []

    def matching(self, relative: str, shown: str) -> list[str]:
        """The repository's files a wildcard matches, in linear time per path and within the walk's budget."""
        if len(relative) > MAX_PATTERN:
            raise ResolveError(f"{shown}: a wildcard include of more than {MAX_PATTERN} characters: not resolved")
        pattern = IncludePattern(relative)
        found = []
        for path in self.listing(pattern.folder, shown):
            self.glob_steps += len(path)
            if self.glob_steps > MAX_GLOB_STEPS:
                raise ResolveError(
                    f"{shown}: wildcard includes scan more than {MAX_GLOB_STEPS:,} characters of paths: not resolved"
                )
            if pattern.matches(path):
                found.append(path)
        return found

    def listing(self, folder: str, shown: str) -> list[str]:
        """Paths of the files under `folder` (`` for the root), `.git` skipped, symlinked folders not entered."""
        if folder in self.listings:
            return self.listings[folder]
        found: list[str] = []
        pending = [(f"{folder}/" if folder else "", self.root / folder)] if self.plain_folder(folder) else []
        while pending:
            prefix, directory = pending.pop()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        self.walked += 1
                        if self.walked > MAX_WALKED_ENTRIES:
                            raise ResolveError(
                                f"{shown}: wildcard includes walk more than {MAX_WALKED_ENTRIES:,} files and folders "
                                "of the repository: not resolved"
                            )
                        if entry.name == ".git":
                            continue
                        if _is_folder(entry):
                            pending.append((f"{prefix}{entry.name}/", Path(entry.path)))
                        else:
                            found.append(prefix + entry.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as err:
                raise ResolveError(f"{shown}: folder {prefix or '.'} cannot be read ({err.strerror})") from None
        self.listings[folder] = sorted(found)
        return self.listings[folder]

    def plain_folder(self, folder: str) -> bool:
        """Whether `folder` is reached without a symlink (git holds a symlinked folder as a file: nothing is
        under it for GitLab, and what is under it for the checkout may be anywhere)."""
        path = self.root
        for part in PurePosixPath(folder).parts:
            path = path / part
            try:
                if stat.S_ISLNK(os.lstat(path).st_mode):
                    return False
            except (OSError, ValueError):
                return False
        return True


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _exists(path: Path, shown: str) -> bool:
    """Whether the repository holds `path` (a link counts: reading it says where it leads); never follows it."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as err:
        raise ResolveError(f"{shown}: cannot be read ({err.strerror or err.__class__.__name__})") from None
    except ValueError:  # an embedded NUL
        return False
    return True
