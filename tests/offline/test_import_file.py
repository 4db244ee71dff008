"""`python -m infra import-file`: names and parents in the import file match what the program registers."""

from __future__ import annotations

import json

import pytest

from infra.__main__ import main
from infra.cloud.names import T
from infra.offline.harness import ProgramRun

POOL_ID = "fr-par/0b5e1f4c-2d7a-4c1e-9a4e-3f1c2b7d9e10"


def test_import_file_targets_the_urns_the_program_uses(capsys: pytest.CaptureFixture[str], dev_run: ProgramRun) -> None:
    assert main(["import-file", "--pool", f"ci-training={POOL_ID}"]) == 0
    document = json.loads(capsys.readouterr().out)
    component, pool = document["resources"]
    assert component == {"type": T.KAPSULE, "name": "kapsule", "component": True}
    assert pool == {
        "type": T.POOL,
        "name": "kapsule-ci-training",
        "id": POOL_ID,
        "parent": "kapsule",
    }
    registered = dev_run.one(pool["type"], pool["name"])
    assert registered.urn.endswith("gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-training")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pool", f"ci-gpu={POOL_ID}"], "no pool 'ci-gpu' in the spec"),
        (["--pool", "ci-compile=12"], "not a Scaleway id like fr-par/<uuid>"),
        (["--pool", f"ci-compile={POOL_ID}\n"], "not a Scaleway id like fr-par/<uuid>"),  # `$` matched before it
        (["--cluster", POOL_ID, "--vpc", "fr-par/" + "-" * 36], "not a Scaleway id like fr-par/<uuid>"),
        (
            ["--pool", "ci-compile=pl-waw/" + POOL_ID.split("/")[1]],
            "--pool 'pl-waw/0b5e1f4c-2d7a-4c1e-9a4e-3f1c2b7d9e10': is in pl-waw, not in the stack's region fr-par",
        ),
        (["--cluster", "nl-ams/" + POOL_ID.split("/")[1]], "is in nl-ams, not in the stack's region fr-par"),
        (["--vpc", POOL_ID], "error: --vpc: goes with --cluster"),
        (["--private-network", POOL_ID, "--pool", f"ci-compile={POOL_ID}"], "error: --private-network: goes with"),
        (
            ["--pool", f"ci-compile={POOL_ID}", "--pool", f"ci-compile={POOL_ID[:-1]}1"],
            f"--pool 'ci-compile': given twice, with ids '{POOL_ID}' and '{POOL_ID[:-1]}1': which one?",
        ),
        (["--pool", "\x1b[2J=" + POOL_ID], "error: --pool \\x1b[2J="),
        (["--pool", "ci-compile"], "expected NAME=ID"),
    ],
)
def test_import_file_rejects_unknown_pools_and_ids(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["import-file", *argv]) == 2
    assert message in capsys.readouterr().err
