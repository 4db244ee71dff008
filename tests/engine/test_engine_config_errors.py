"""A mistyped stack key under the real engine: `pulumi preview` says what the program says, first and in one line
naming the file, the key and the key meant; never the SDK's `Missing required configuration variable` with its
tab-indented second line, and no provider is asked anything (issue 39, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.engine import EngineProject

SECRETS = {"gitlab:token": "glpat-engine-config-errors", "registry_pull_secret_key": "engine-config-errors-key"}
READ = "read: gpu-ci:, gitlab:, kubernetes:, scaleway:, pulumi:"


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (
            "  gpu-ci:platform:\n",
            "  gpu-ci:platfrom:\n",
            "gpu-ci:platfrom: unknown key (the program reads gpu-ci:platform); did you mean gpu-ci:platform?",
        ),
        (
            "  gpu-ci:platform:\n",
            "  gitlab:baseURL: https://gitlab.example.com/api/v4/\n  gpu-ci:platform:\n",
            "gitlab:baseURL: unknown key of the gitlab provider, which would ignore it; did you mean gitlab:baseUrl?",
        ),
    ],
    ids=["namespace-key", "provider-key"],
)
def test_preview_names_a_mistyped_key_first_in_one_line(tmp_path: Path, old: str, new: str, line: str) -> None:
    project = EngineProject(tmp_path)
    project.init_stack(SECRETS)
    text = project.stack_file().read_text(encoding="utf-8")
    assert old in text
    project.stack_file().write_text(text.replace(old, new, 1), encoding="utf-8")
    preview = project.pulumi("preview", check=False)
    assert preview.returncode != 0
    diagnostics = preview.stdout.partition("\nDiagnostics:\n")[2].partition("\nResources:\n")[0]
    errors = [entry.strip() for entry in diagnostics.splitlines() if entry.strip().startswith("error:")]
    ours = f"error: Pulumi.dev.yaml: {line}"
    # the second: the SDK's inline runtime (tests/support/doubles/language_host.py) restating the program's error
    assert errors == [ours, ours.replace("error: ", "error: an unhandled error occurred: ", 1)], preview
    assert "Missing required configuration variable" not in preview.output
    assert "\\t" not in preview.output and "\t" not in preview.output
    assert [r for r in project.records() if r["method"] in {"Check", "Create", "Invoke"}] == []
