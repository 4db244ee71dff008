"""The program's reading of a stack file (issue 36, item 3): on a sample of the generated variants that the loader and
the spec accept (tests/support/stack_variants.py, seed SEED), the real engine's `pulumi preview --json` registers the
resources `plan --json` records for the same file, with the same inputs where the preview knows them.

test_engine_stack_differential.py shows that the loader hands the program what the CLI hands it; this shows the
step after: what the program builds from the CLI's reading under the engine is what `plan` builds from the loader's.
The sample prefers variants that change the platform (a value the spec reads), then variants written otherwise
that read as the committed file. The variant's text is the stack file, byte for byte, but for the passphrase salt
and the two secrets, inserted as the CLI writes them (the committed file holds no secret); the Kubernetes half is
the double here (test_engine_deploy.py holds the real provider to the plan on the dev stack).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.engine import EngineProject, known_differences, preview_steps
from support.paths import ROOT
from support.plans import plan_json
from support.stack_variants import SEED, Variant, variants

from infra.cli.plan import displayable
from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.harness import run_program
from infra.offline.stack_config import StackFileError, load_stack_config

COUNT = 4000
"""Variants drawn (the differential test's corpus): the sample is taken from those the loader and the spec accept."""
CHANGED = 4
"""Variants in the sample whose platform differs from the committed file's."""
ALIKE = 2
"""Variants in the sample written otherwise whose platform reads as the committed file's."""
SECRETS = {"gitlab:token": "glpat-engine-variant-token", "registry_pull_secret_key": "engine-variant-pull-key"}
PLATFORM = "gpu-ci:platform"
PLACEHOLDER = "  gpu-ci:registry_pull_secret_key: bootstrap-not-done\n"
"""The committed file's stand-in for the pull key (the bootstrap step replaces it): the secret goes in its place."""
ENGINE_PROVIDER_KEYS = ("__internal", "version")
"""What the engine adds to a provider resource's inputs (its bookkeeping, the plugin version the SDK asks for)."""


@dataclass(frozen=True)
class Sampled:
    variant: Variant
    path: Path
    changed: bool
    """Whether its platform differs from the committed file's."""


def _platform(path: Path) -> Any:
    return json.loads(load_stack_config("dev", path=path).as_pulumi_config()[PLATFORM])


def _sample(folder: Path) -> list[Sampled]:
    """The first CHANGED variants of the dev stack file that change its platform and the first ALIKE that do not,
    each accepted by the loader and by the spec (the program's own first step, under `plan` as under `up`)."""
    committed = _platform(ROOT / "Pulumi.dev.yaml")
    wanted = {True: CHANGED, False: ALIKE}
    found: list[Sampled] = []
    for variant in variants(COUNT, SEED):
        if (
            variant.base != "Pulumi.dev.yaml"
            or variant.text.count("\nconfig:\n") != 1
            or PLACEHOLDER not in variant.text
        ):
            continue
        path = folder / f"v{variant.index}" / "Pulumi.dev.yaml"
        path.parent.mkdir()
        path.write_text(variant.text, encoding="utf-8")
        try:
            config = load_stack_config("dev", path=path)
            platform = json.loads(config.as_pulumi_config()[PLATFORM])
            load_platform(platform)
        except (StackFileError, SpecError, KeyError, ValueError):
            continue
        changed = platform != committed
        if wanted[changed] == 0:
            continue
        wanted[changed] -= 1
        found.append(Sampled(variant, path, changed))
        if not any(wanted.values()):
            break
    return found


def _with_secrets(text: str, written: str) -> str:
    """The variant's text with the salt and the secure values of `written` (the CLI's own file after `stack init`
    and `config set --secret`): the salt as the first line, the token as the first entry of `config:`, the pull
    key's secret in place of its committed placeholder."""
    document = yaml.safe_load(written)

    def secure(key: str) -> str:
        return f"  {key}:\n    secure: {document['config'][key]['secure']}\n"

    head, rest = text.split("\nconfig:\n", 1)
    rest = rest.replace(PLACEHOLDER, secure("gpu-ci:registry_pull_secret_key"), 1)
    return f"encryptionsalt: {document['encryptionsalt']}\n{head}\nconfig:\n{secure('gitlab:token')}{rest}"


@dataclass(frozen=True)
class Compared:
    sampled: Sampled
    preview: dict[str, Any]
    plan: dict[str, Any]

    def differences(self) -> dict[str, list[str]]:
        plan = {r["urn"]: r for r in self.plan["resources"]}
        found: dict[str, list[str]] = {}
        engine_urns = set()
        for step in preview_steps(self.preview):
            urn = step["urn"]
            engine_urns.add(urn)
            if urn not in plan:
                found[urn] = ["registered by the engine only"]
                continue
            inputs = displayable(step["newState"].get("inputs", {}))
            if step["newState"]["type"].startswith("pulumi:providers:"):
                for key in ENGINE_PROVIDER_KEYS:
                    inputs.pop(key, None)
            if step["newState"]["type"] != plan[urn]["type"]:
                found[urn] = [f"type: engine {step['newState']['type']}, plan {plan[urn]['type']}"]
            elif diff := known_differences(inputs, plan[urn]["inputs"]):
                found[urn] = diff
        for urn in set(plan) - engine_urns:
            found[urn] = ["recorded by plan only"]
        return found


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> list[Compared]:
    sample = _sample(tmp_path_factory.mktemp("variants"))
    secrets_project = EngineProject(tmp_path_factory.mktemp("variant-secrets"))
    secrets_project.init_stack(SECRETS)
    written = secrets_project.stack_file().read_text(encoding="utf-8")

    def preview(sampled: Sampled) -> tuple[Sampled, Path, dict[str, Any]]:
        project = EngineProject(tmp_path_factory.mktemp(f"variant-{sampled.variant.index}"))
        project.pulumi("stack", "init", "dev", "--secrets-provider", "passphrase")
        project.stack_file().write_text(_with_secrets(sampled.variant.text, written), encoding="utf-8")
        result = project.pulumi("preview", "--json", check=False)
        assert result.returncode == 0, f"{sampled.variant.what}\n{result}"
        return sampled, project.stack_file(), result.json()

    with ThreadPoolExecutor(max_workers=2) as pool:  # the engine's processes, two at a time
        previews = list(pool.map(preview, sample))
    found = []
    for sampled, path, document in previews:  # the offline plans one after another: the mocks are process-wide
        offline = load_stack_config("dev", path=path).with_values(SECRETS, secret_keys=tuple(SECRETS))
        found.append(Compared(sampled, document, plan_json(offline, run_program(offline))))
    return found


def test_the_engine_builds_from_each_variant_what_plan_builds(compared: list[Compared]) -> None:
    changed = [c for c in compared if c.sampled.changed]
    assert len(changed) == CHANGED and len(compared) == CHANGED + ALIKE, [c.sampled.variant.what for c in compared]
    differences = {c.sampled.variant.what: d for c in compared if (d := c.differences())}
    assert differences == {}
