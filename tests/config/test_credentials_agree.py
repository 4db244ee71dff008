"""The spec and the policy pack agree on what a credential is. A name's words are one definition
(`policy/policies/definitions.py`), read in any case by the pack and upper-cased by the spec; the value shapes
are each side's own (the spec also redacts them wherever text is shown), so this test holds the two together.
The spec may be stricter, never laxer: a value or a name the pack refuses in a plain CI variable is refused by
the spec first, at its key."""

from __future__ import annotations

import importlib
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.config import credentials
from infra.config.credentials import credential_name, credential_value
from policy.policies import gitlab_access as pol

# One value per alternative of the pack's CREDENTIAL_VALUE, at the pack's shortest length.
PACK_VALUES = {
    "GitLab personal token": "glpat-" + "a" * 16,
    "GitLab token, any prefix the pack takes": "glx-" + "0" * 16,
    "GitLab runner token": "glrt-" + "A_b-" * 4,
    "GitHub token": "ghp_" + "a1" * 15,
    "GitHub fine-grained token": "github_pat_" + "a_" * 15,
    "Scaleway access key": "SCW" + "A1" * 8 + "B",
    "AWS access key": "AKIA" + "ABCD1234" * 2,
    "AWS session key": "ASIA" + "ABCD1234" * 2,
    "Hugging Face token": "hf_" + "aB3" * 10,
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "JSON Web Token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig",
}

WORDS = (
    "HF",
    "TOKEN",
    "MAX",
    "TOKENS",
    "API",
    "KEY",
    "SECRET",
    "ACCESS",
    "DB",
    "PASSWORD",
    "AUTH",
    "AUTHOR",
    "WANDB",
    "SSH",
    "PRIVATE",
    "DEPLOY",
    "KUBECONFIG",
    "CLIENT",
    "ID",
    "CREDENTIAL",
    "CREDENTIALS",
    "PASS",
)


@pytest.mark.parametrize("value", PACK_VALUES.values(), ids=PACK_VALUES.keys())
def test_every_value_the_pack_calls_a_credential_the_spec_does_too(value: str) -> None:
    assert pol.CREDENTIAL_VALUE.search(value), "the sample no longer matches the pack: update it"
    assert credential_value(value) is not None, value
    assert credential_value(f"prefix {value} suffix") is not None  # inside a longer value, as the pack finds it


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.sampled_from(("", "_", "__")))
def test_the_spec_and_the_pack_read_variable_names_alike(words: list[str], lead: str) -> None:
    name = lead + "_".join(words)
    assert credential_name(name) == bool(pol.CREDENTIAL_KEY.search(name)), name
    lower = name.lower()
    assert credential_name(lower) == bool(pol.CREDENTIAL_KEY.search(lower)), lower


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "_-. ", max_size=60))
def test_any_text_the_pack_calls_a_credential_the_spec_does_too(text: str) -> None:
    if pol.CREDENTIAL_VALUE.search(text):
        assert credential_value(text) is not None, text


def test_no_shape_matches_a_text_shorter_than_the_shortest_credential() -> None:
    """`credential_value` answers None below SHORTEST_CREDENTIAL characters without trying the shapes: the
    shortest text each pattern can match, as the regular-expression parser works it out, is no shorter."""
    parser = importlib.import_module("re._parser")  # the `re` module's own parser (no stubs: not public)
    widths = [parser.parse(shape.pattern).getwidth()[0] for _, shape in credentials._VALUE_SHAPES]
    assert min(widths) == credentials.SHORTEST_CREDENTIAL
    assert credential_value("glrt-" + "a" * 8) == "a GitLab token"  # the shortest, at the limit
