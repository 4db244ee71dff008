"""Credential-shaped names and values: what must be a stack secret, never a plain value of the config.

A plain CI variable is printed by `plan` (so it reaches the MR note) and a profile variable is committed in
clear into the training project's templates file. Both refuse a name or a value that looks like a
credential; the fix is the `secret:` form (`pulumi config set --secret <key>`), which keeps it encrypted.
The same list names the provider settings that must be `secure:` in a stack file.
"""

from __future__ import annotations

import re

_NAME_WORDS = re.compile(
    r"(?:^|_)(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTH|KUBECONFIG|"
    r"(?:API|ACCESS|SECRET|PRIVATE|SSH|SIGNING|ENCRYPTION|DEPLOY|CLIENT)_KEY)(?:_|$)"
)
"""Words of a variable name that say it holds a credential (HF_TOKEN, WANDB_API_KEY, DB_PASSWORD; not
MAX_TOKENS): the same words the policy pack's ci-secret-variables-masked rule looks for."""

_VALUE_SHAPES = (
    (
        "a GitLab token",
        re.compile(r"gl(?:pat|rt|dt|ptt|ft|cbt|oas|imt|agent|soat|ffct)-[A-Za-z0-9_.-]{8,}|gl[a-z]{1,6}-[\w-]{16,}"),
    ),
    ("a Hugging Face token", re.compile(r"hf_[A-Za-z0-9]{16,}")),
    ("an API key (sk-...)", re.compile(r"sk-[A-Za-z0-9_-]{16,}")),
    ("a GitHub token", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("a Slack token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Scaleway access key", re.compile(r"SCW[A-Z0-9]{17}")),
    ("an AWS access key", re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a JSON Web Token", re.compile(r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}")),
)
"""Value shapes: at least every shape the policy pack's CREDENTIAL_VALUE refuses.

tests/config/test_credentials_agree.py holds the two together.
"""

PROVIDER_CREDENTIAL_KEYS = (
    "gitlab:token",
    "scaleway:access_key",
    "scaleway:secret_key",
    "scaleway:accessKey",
    "scaleway:secretKey",
    "kubernetes:kubeconfig",
    "aws:accessKey",
    "aws:secretKey",
)
"""Provider settings that hold a credential: in a stack file they must be `secure:` values."""


_USERINFO = re.compile(r"(?<=://)[^\s/?#@]+@")
"""`user:password@` after a URL's scheme."""
_LEADING_USERINFO = re.compile(r"(?<=')[^\s'/?#@:]+:[^\s'/?#@]+@")
"""`user:password@` at the start of a quoted value with no scheme (an image `user:pass@host/path`)."""
REDACTED = "<redacted>"


def redact_credentials(text: str) -> str:
    """`text` with every credential-shaped part (a token, a key, a URL's userinfo) replaced by `<redacted>`: the
    last gate of every error and warning line, whatever field, key or reason quoted the value."""
    text = _USERINFO.sub(REDACTED + "@", text)
    text = _LEADING_USERINFO.sub(REDACTED + "@", text)
    for _, shape in _VALUE_SHAPES:
        text = shape.sub(REDACTED, text)
    return text


def credential_name(name: str) -> bool:
    """Whether a variable name says it holds a credential (HF_TOKEN, WANDB_API_KEY, ...)."""
    return _NAME_WORDS.search(name.upper()) is not None


def credential_value(value: str) -> str | None:
    """What credential `value` looks like (e.g. "a Hugging Face token"), or None."""
    for what, shape in _VALUE_SHAPES:
        if shape.search(value):
            return what
    return None


def credential_kind(name: str, value: str) -> str | None:
    """What credential the variable `name: value` looks like, by its value first, then by its name; or None."""
    return credential_value(value) or ("a credential by its name" if credential_name(name) else None)


def credential_problem(name: str, value: str) -> str | None:
    """Why a plain (non-secret) variable `name: value` must be a secret instead, or None."""
    what = credential_kind(name, value)
    if what is None:
        return None
    key = name.lower()
    return (
        f"looks like {what}: a plain value is printed by plan and written in clear; store it with "
        f"`pulumi config set --secret {key} ...` and write {{secret: {key}}}"
    )
