"""The stack's own keys (infra/config/stack_keys.py): a namespace or key nothing reads is named, with the key it
most likely means; what the program, the providers and the engine read passes."""

from __future__ import annotations

import pytest

from infra.config.stack_keys import in_file, key_problems, missing_secret, missing_spec, unread_keys

READ = "read: gpu-ci:, gitlab:, kubernetes:, scaleway:, pulumi:"


@pytest.mark.parametrize(
    ("key", "line"),
    [
        (
            "gpu-ci:platfrom",
            "gpu-ci:platfrom: unknown key (the program reads gpu-ci:platform); did you mean gpu-ci:platform?",
        ),
        (
            "gpu-cl:platform",
            f"gpu-cl:platform: unknown namespace, nothing reads it ({READ}); did you mean gpu-ci:platform?",
        ),
        ("gitlb:token", f"gitlb:token: unknown namespace, nothing reads it ({READ}); did you mean gitlab:token?"),
        ("aws:region", f"aws:region: unknown namespace, nothing reads it ({READ})"),
        (
            "gitlab:baseURL",
            "gitlab:baseURL: unknown key of the gitlab provider, which would ignore it; did you mean gitlab:baseUrl?",
        ),
        (
            "scaleway:acess_key",
            "scaleway:acess_key: unknown key of the scaleway provider, which would ignore it; did you mean "
            "scaleway:access_key?",
        ),
        (
            "kubernetes:kubeConfig",
            "kubernetes:kubeConfig: unknown key of the kubernetes provider, which would ignore it; did you mean "
            "kubernetes:kubeconfig?",
        ),
        ("kubernetes:zzz", "kubernetes:zzz: unknown key of the kubernetes provider, which would ignore it"),
    ],
)
def test_a_key_nothing_reads_is_named_with_the_key_it_most_likely_means(key: str, line: str) -> None:
    assert key_problems([key], "gpu-ci") == [line]


def test_what_the_program_the_providers_and_the_engine_read_passes() -> None:
    keys = [
        "gpu-ci:platform",
        "gpu-ci:registry_pull_secret_key",
        "gitlab:baseUrl",
        "gitlab:token",
        "scaleway:access_key",  # the Terraform bridge's spelling, as docs/operations.md writes it
        "scaleway:secretKey",
        "scaleway:version",  # the engine's, in every provider's namespace
        "kubernetes:enableServerSideApply",
        "pulumi:disable-default-providers",
    ]
    assert key_problems(keys, "gpu-ci") == []
    assert key_problems(keys, "gpu-ci", ["registry_pull_secret_key"]) == []
    assert unread_keys(keys, "gpu-ci", ["registry_pull_secret_key"]) == []


def test_a_typo_of_a_secret_the_spec_reads_is_an_error_once_the_spec_says_which() -> None:
    keys = ["gpu-ci:platform", "gpu-ci:regsitry_pull_secret_key"]
    assert key_problems(keys, "gpu-ci") == []  # before the spec: perhaps a secret it reads
    assert key_problems(keys, "gpu-ci", ["registry_pull_secret_key"]) == [
        "gpu-ci:regsitry_pull_secret_key: unknown key (the program reads gpu-ci:platform, "
        "gpu-ci:registry_pull_secret_key); did you mean gpu-ci:registry_pull_secret_key?"
    ]


def test_a_key_of_ours_that_is_no_typo_is_a_warning_not_an_error() -> None:
    """A secret the spec no longer names (the pull key of a registry made public): harmless, said once."""
    keys = ["gpu-ci:platform", "gpu-ci:registry_pull_secret_key", "gpu-ci:hf_token"]
    assert key_problems(keys, "gpu-ci", ["hf_token"]) == []
    assert unread_keys(keys, "gpu-ci", ["hf_token"]) == [
        "gpu-ci:registry_pull_secret_key: nothing reads this key (the program reads gpu-ci:hf_token, "
        "gpu-ci:platform): name it in the spec or remove it (pulumi config rm gpu-ci:registry_pull_secret_key)"
    ]


def test_a_hostile_key_stays_on_its_line() -> None:
    (line,) = key_problems(["evil\n\x1b[2J:x" + "y" * 500], "gpu-ci")
    assert "\n" not in line and "\x1b" not in line and len(line) < 400


def test_each_line_names_its_file_and_holds_no_escape_sequence() -> None:
    lines = in_file("Pulumi.dev.yaml", "\n".join([missing_spec("gpu-ci"), missing_secret("gpu-ci", "hf_token")]))
    assert lines.splitlines() == [
        "Pulumi.dev.yaml: gpu-ci:platform: missing: the stack holds no platform spec (every key: "
        "docs/config-reference.md; Pulumi.dev.yaml is a complete one)",
        "Pulumi.dev.yaml: gpu-ci:hf_token: missing: the spec reads this stack secret: pulumi config set --secret "
        "hf_token ...",
    ]
    assert "\t" not in lines and "\\t" not in lines and "\\n" not in lines
