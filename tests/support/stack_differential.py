"""Both readings of a stack file and their verdict, for the differential test of the offline loader
(tests/engine/test_engine_stack_differential.py): the loader's (`load_stack_config`: its StackConfig, or its one
StackFileError line) and the CLI's (`pulumi config --json`, through `.engine/bin/stackread`, which runs the
CLI's own code for that command on many files per process; the test holds it against the real CLI).

The verdicts: `same` (both refuse, or both hand the program the same values with the same keys secret),
`stricter` (the loader refuses a file the CLI reads) and `defect` (the loader reads a file the CLI refuses, both
read it and differ, or the loader fails otherwise than with StackFileError). Values are compared as the program
receives them: text, an object as JSON, read back with its types (1 is not 1.0, nor true); a secret's value
is not compared (offline it cannot be decrypted), only which keys are secret.

Run as a script, it makes one variant again and prints both readings and the verdict:

    venv/bin/python tests/support/stack_differential.py SEED INDEX
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the tests' and the project's imports
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from infra.offline.stack_config import StackFileError, load_stack_config
from support.engine import ENGINE_BIN
from support.paths import ROOT

STACKREAD = ENGINE_BIN / "stackread"
STACK = "dev"


@dataclass(frozen=True)
class Reading:
    """What one reader hands the program: each key's value as text (None where secret), or why it refuses."""

    refused: str | None = None
    values: dict[str, str | None] = field(default_factory=dict)
    objects: frozenset[str] = frozenset()
    """The keys the CLI marks as objects (their text is JSON)."""
    crashed: str | None = None

    def shown(self) -> str:
        if self.crashed:
            return f"traceback: {self.crashed}"
        if self.refused is not None:
            return f"refused: {self.refused}"
        return json.dumps(self.values, sort_keys=True, ensure_ascii=False)


def offline_reading(path: Path) -> Reading:
    """The loader's reading; any exception but StackFileError is a crash (the loader's one error type)."""
    try:
        config = load_stack_config(STACK, root=ROOT, path=path)
        values = config.as_pulumi_config()
    except StackFileError as err:
        return Reading(refused=str(err))
    except Exception as err:  # noqa: BLE001 - what the test reports: a traceback where one line is due
        return Reading(crashed=f"{type(err).__name__}: {err}")
    return Reading(values={k: None if k in config.secret_keys else v for k, v in values.items()})


def cli_reading(entry: dict[str, Any]) -> Reading:
    """A reading from one `pulumi config --json` document (or stackread's `{"error": ...}`)."""
    if "error" in entry:
        return Reading(refused=entry["error"])
    values = {k: None if v["secret"] else v.get("value", "") for k, v in entry.get("config", {}).items()}
    return Reading(
        values=values, objects=frozenset(k for k, v in entry.get("config", {}).items() if "objectValue" in v)
    )


def stackread(paths: list[Path]) -> list[dict[str, Any]]:
    """stackread's document for each file, in order (one process for all)."""
    done = subprocess.run(
        [str(STACKREAD), str(ROOT / "Pulumi.yaml"), STACK, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    entries = [json.loads(line) for line in done.stdout.split("\n") if line]
    assert [e["file"] for e in entries] == list(map(str, paths)), done.stderr
    return entries


def typed(value: Any) -> Any:
    """A JSON value with its types kept apart (Python has 1 == 1.0 == True)."""
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, typed(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("list", tuple(typed(v) for v in value))
    return (type(value).__name__, value)


def _as_json(text: str) -> Any:
    try:
        return typed(json.loads(text))
    except ValueError:
        return ("not JSON", text)


def verdict(offline: Reading, cli: Reading) -> tuple[str, str]:
    """`same`, `stricter` or `defect`, and why."""
    if offline.crashed:
        return "defect", "the loader fails with a traceback"
    if offline.refused is not None:
        return ("same", "both refuse") if cli.refused is not None else ("stricter", "the loader refuses")
    if cli.refused is not None:
        return "defect", "the loader reads what the CLI refuses"
    if set(offline.values) != set(cli.values):
        return "defect", f"other keys: {sorted(set(offline.values) ^ set(cli.values))}"
    for key, value in cli.values.items():
        mine = offline.values[key]
        if (mine is None) != (value is None):
            return "defect", f"{key} secret for {'the loader' if mine is None else 'the CLI'} only"
        if value is None or mine == value:
            continue
        if mine is None or key not in cli.objects or _as_json(mine) != _as_json(value):
            return "defect", f"{key} read otherwise"
    return "same", "both read the same"


def main(argv: list[str]) -> int:
    from support.stack_variants import variant

    seed, index = int(argv[0]), int(argv[1])
    made = variant(index, seed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"Pulumi.{STACK}.yaml"
        path.write_text(made.text, encoding="utf-8")
        offline = offline_reading(path)
        cli = cli_reading(stackread([path])[0])
    print(f"variant {index} of seed {seed}: {made.what}\n--- file\n{made.text}\n---")
    print(f"CLI:    {cli.shown()}\nloader: {offline.shown()}")
    kind, why = verdict(offline, cli)
    print(f"verdict: {kind} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
