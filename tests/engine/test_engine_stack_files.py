"""One reader of stack files: the real CLI and the offline loader (infra/offline/stack_config.py) either both refuse
a stack file or hand the program the same config, for every file of the corpus (tests/support/stack_files.py).

The CLI's reading is `pulumi config --json`: the config the engine hands the program (each value a string, an
object as JSON), read from the stack file by the same code; test_engine_deploy.py checks on the dev stack that a
preview's program receives exactly that. A file is refused on the CLI's side when the CLI fails on it or when the
program refuses what the CLI hands it (`load_platform`, the program's first step: `pulumi preview` stops there
too). Secret values are not compared (offline they cannot be decrypted): only which keys are secret.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.engine import EngineProject
from support.paths import ROOT
from support.stack_files import BAD_INPUT_IDS, BROKEN, READ_APART, BadInputFile, bad_input_files

from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.stack_config import StackFileError, load_stack_config

PLATFORM = "gpu-ci:platform"

REFUSED_AT = {c.id: c.refused_at for c in READ_APART if c.refused_at}
STRICTER_OFFLINE = {c.id for c in READ_APART if c.stricter_offline}


@dataclass(frozen=True)
class Reading:
    """What one reader hands the program: each key's value (canonical JSON or the text; None where secret)."""

    refused: str | None
    values: dict[str, str | None]
    crashed: str | None = None
    """A reader that fails with a traceback instead of one line (offline), for the test to report."""

    def platform(self) -> Any:
        return json.loads(self.values[PLATFORM] or "null")


def _canonical(value: str) -> str:
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return json.dumps(parsed, sort_keys=True) if isinstance(parsed, (dict, list)) else value


def offline_reading(path: Path) -> Reading:
    try:
        config = load_stack_config("dev", path=path)
        values = config.as_pulumi_config()
    except (StackFileError, FileNotFoundError) as err:
        return Reading(str(err), {})
    except Exception as err:  # noqa: BLE001 - what the test reports: a traceback where one line is due
        return Reading(None, {}, crashed=f"{type(err).__name__}: {err}")
    return Reading(None, {k: None if k in config.secret_keys else _canonical(v) for k, v in sorted(values.items())})


def cli_reading(project: EngineProject, folder: Path) -> Reading:
    result = project.pulumi("config", "--json", "--stack", "dev", check=False, cwd=folder)
    if result.returncode != 0:
        return Reading(result.stderr.strip().splitlines()[0] if result.stderr.strip() else "refused", {})
    values = json.loads(result.stdout)
    return Reading(
        None, {k: None if v["secret"] else _canonical(v.get("value", "")) for k, v in sorted(values.items())}
    )


def program_refusal(reading: Reading) -> str | None:
    """What the program says of the config a reader hands it, if it refuses it before any resource."""
    if reading.refused is not None:
        return reading.refused
    if reading.values.get(PLATFORM) is None:
        return f"no {PLATFORM}" if PLATFORM not in reading.values else None
    try:
        load_platform(reading.platform())
    except SpecError as err:
        return str(err)
    except ValueError as err:
        return f"not a readable config object ({err})"
    return None


BATCH = 20
"""Invalid specs read per stack file: each its own key (`gpu-ci:spec-<id>`), a batch read again one file per spec
if either reader refuses it."""


def _batch_file(cases: list[BadInputFile]) -> bytes:
    return yaml.safe_dump({"config": {f"gpu-ci:{c.id}": c.platform for c in cases}}, allow_unicode=True).encode()


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Reading, Reading]]:
    """Both readings of every case; the CLI's four at a time, each file in its own folder (one stack, one backend).

    The invalid specs the offline loader reads are read in batches (`BATCH` per file, each at its own key); a batch
    the CLI refuses is read again one file per spec."""
    project = EngineProject(tmp_path_factory.mktemp("engine-stack-files"))
    project.init_stack()
    workdir = project.workdir / "cases"

    def write(name: str, content: bytes) -> Path:
        folder = workdir / name
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "Pulumi.yaml", folder / "Pulumi.yaml")
        (folder / "Pulumi.dev.yaml").write_bytes(content)
        return folder

    def read_all(files: dict[str, bytes]) -> dict[str, tuple[Reading, Reading]]:
        folders = {name: write(name, content) for name, content in files.items()}
        with ThreadPoolExecutor(max_workers=4) as pool:
            cli = list(pool.map(lambda folder: cli_reading(project, folder), folders.values()))
        return {
            name: (offline_reading(folder / "Pulumi.dev.yaml"), reading)
            for (name, folder), reading in zip(folders.items(), cli, strict=True)
        }

    specs = bad_input_files()
    offline = {c.id: offline_reading(write(c.id, c.content) / "Pulumi.dev.yaml") for c in specs}
    alone = [c for c in specs if offline[c.id].refused or offline[c.id].crashed]
    batched = [c for c in specs if c not in alone]
    batches = {f"batch-{i}": batched[i : i + BATCH] for i in range(0, len(batched), BATCH)}
    found = read_all(
        {c.id: c.content for c in [*BROKEN, *READ_APART]}
        | {f"{c.id}-alone": c.content for c in alone}
        | {name: _batch_file(cases) for name, cases in batches.items()}
    )
    for case in alone:
        found[case.id] = found.pop(f"{case.id}-alone")
    again = []
    for name, cases in batches.items():
        batch_offline, batch_cli = found.pop(name)
        if batch_offline.refused or batch_offline.crashed or batch_cli.refused:
            again += cases
            continue
        for case in cases:
            key = f"gpu-ci:{case.id}"
            assert batch_offline.values[key] == offline[case.id].values[PLATFORM]
            found[case.id] = (
                offline[case.id],
                Reading(None, {**offline[case.id].values, PLATFORM: batch_cli.values[key]}),
            )
    return found | read_all({f"{c.id}-again": c.content for c in again})  # not expected: the test then reports it


@pytest.mark.parametrize("case_id", [*(c.id for c in [*BROKEN, *READ_APART]), *BAD_INPUT_IDS])
def test_the_cli_and_the_offline_loader_agree_or_both_refuse(
    readings: dict[str, tuple[Reading, Reading]], case_id: str
) -> None:
    offline, cli = readings.get(case_id) or readings[f"{case_id}-again"]
    assert offline.crashed is None, f"the offline loader fails with a traceback: {offline.crashed}"
    if case_id in STRICTER_OFFLINE:  # the one disagreement allowed, named with its reason in the corpus
        assert offline.refused is not None and cli.refused is None, (offline.refused, cli.refused)
        assert program_refusal(cli) is None, "stricter offline no longer: drop the case's stricter_offline"
        return
    if offline.refused is None and cli.refused is None:
        assert offline.values == cli.values
    elif offline.refused is None:
        pytest.fail(f"the CLI refuses what the offline loader reads: {cli.refused}")
    else:
        assert program_refusal(cli) is not None, f"offline: {offline.refused}; the CLI hands the program {cli.values}"
    refused_at = REFUSED_AT.get(case_id)
    if refused_at:
        refusal = program_refusal(cli)
        assert refusal is not None and refusal.startswith(f"{refused_at}="), refusal


def test_the_corpus_holds_the_broken_files_the_tests_read_and_every_bad_spec() -> None:
    ids = [case.id for case in [*BROKEN, *READ_APART]] + BAD_INPUT_IDS
    assert len(ids) == len(set(ids))
    assert len(BAD_INPUT_IDS) >= 130
    assert {c.id for c in BROKEN} >= {"base-60-time", "date", "duplicate", "token"}
