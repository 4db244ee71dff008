"""The offline loader against the CLI on a generated corpus (issue 36): thousands of one- and two-change variants
of the committed stack files (tests/support/stack_variants.py, seed SEED), each read by `load_stack_config` and by
the CLI's own code (`.engine/bin/stackread`, tests/support/stack_differential.py), with the verdicts same /
stricter / defect; 0 defects. stackread is held against the real `pulumi config --json` on a sample, so it
cannot drift from the CLI. The hand corpus stays in test_engine_stack_files.py.

Each defect is written to DEFECTS (one a line: class, the command that makes the variant again, the CLI's
reading, the loader's) and the failure names the same command.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.engine import EngineProject
from support.paths import ROOT
from support.stack_differential import STACKREAD, Reading, cli_reading, offline_reading, stackread, verdict
from support.stack_variants import SEED, Variant, variants

COUNT = 4000
"""Variants read by both readers (about 6 s each side)."""
CLI_SAMPLE = 60
"""Variants also read by the real CLI (about 0.5 s each), to hold stackread to it."""
DEFECTS = Path(os.environ.get("GPU_CI_DIFFERENTIAL_DEFECTS", "/tmp/gpu-ci-stack-differential-defects.txt"))


def command(variant: Variant) -> str:
    return f"venv/bin/python tests/support/stack_differential.py {variant.seed} {variant.index}"


@dataclass(frozen=True)
class Read:
    variant: Variant
    path: Path
    cli_entry: dict[str, object]
    offline: Reading
    cli: Reading


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Read]:
    if not STACKREAD.is_file():
        pytest.skip(
            "the differential test of the stack-file loader: stackread is not built here (scripts/engine/build)"
        )
    folder = tmp_path_factory.mktemp("stack-differential")
    made = variants(COUNT, SEED)
    paths = []
    for variant in made:
        path = folder / f"v{variant.index}" / "Pulumi.dev.yaml"
        path.parent.mkdir()
        path.write_text(variant.text, encoding="utf-8")
        paths.append(path)
    entries = stackread(paths)
    return [Read(v, p, e, offline_reading(p), cli_reading(e)) for v, p, e in zip(made, paths, entries, strict=True)]


def test_the_offline_loader_reads_what_the_cli_reads_or_refuses(corpus: list[Read]) -> None:
    verdicts = [(read, *verdict(read.offline, read.cli)) for read in corpus]
    counts = Counter(kind for _, kind, _ in verdicts)
    print(f"\n{len(corpus)} variants of seed {SEED}: {dict(sorted(counts.items()))}")
    defects = [
        f"{why}\t{command(read.variant)}\t{read.variant.what[:200]}\t"
        f"CLI: {read.cli.shown()[:300]}\tloader: {read.offline.shown()[:300]}"
        for read, kind, why in verdicts
        if kind == "defect"
    ]
    DEFECTS.write_text("".join(line.replace("\n", "\\n") + "\n" for line in defects), encoding="utf-8")
    assert counts["same"] > counts["stricter"], counts  # the corpus is mostly read, not refused
    assert not defects, f"{len(defects)} defects ({DEFECTS}); the first: {defects[0]}"


def test_the_corpus_covers_both_readings(corpus: list[Read]) -> None:
    """Enough of it read by the CLI, and refused by it, for the verdicts to mean something."""
    accepted = sum(1 for read in corpus if read.cli.refused is None)
    assert COUNT // 4 < accepted < COUNT * 9 // 10, accepted
    assert sum(1 for read in corpus if len(read.variant.changes) == 2) > COUNT // 3


def test_stackread_reads_as_the_real_cli(corpus: list[Read], tmp_path: Path) -> None:
    """The real `pulumi config --json` on a sample of the corpus, half of it files the CLI refuses."""
    project = EngineProject(tmp_path)
    project.init_stack()
    rng = random.Random(SEED)
    refused = [r for r in corpus if r.cli.refused is not None]
    read = [r for r in corpus if r.cli.refused is None]
    sample = rng.sample(refused, CLI_SAMPLE // 2) + rng.sample(read, CLI_SAMPLE // 2)

    def real(item: Read) -> tuple[Read, int, str]:
        folder = tmp_path / "cases" / item.path.parent.name
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "Pulumi.yaml", folder / "Pulumi.yaml")
        shutil.copy(item.path, folder / "Pulumi.dev.yaml")
        result = project.pulumi("config", "--json", "--stack", "dev", check=False, cwd=folder)
        return item, result.returncode, result.stdout

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(real, sample))
    drift = []
    for item, code, out in results:
        if code != 0 or "error" in item.cli_entry:
            if (code != 0) != ("error" in item.cli_entry):
                drift.append(f"{command(item.variant)}: the CLI exits {code}, stackread: {item.cli_entry}")
        elif json.loads(out) != item.cli_entry.get("config", {}):
            drift.append(f"{command(item.variant)}: the CLI prints {out}, stackread {item.cli_entry}")
    assert drift == []
