"""Credential-shaped names and values: what must be a stack secret, never a plain value of the config.

A plain CI variable is printed by `plan` (so it reaches the MR note) and a profile variable is committed in
clear into the training project's templates file. Both refuse a name or a value that looks like a
credential; the fix is the `secret:` form (`pulumi config set --secret <key>`), which keeps it encrypted.
The same list names the provider settings that must be `secure:` in a stack file.
"""

from __future__ import annotations

import os
import re

from policy.policies import definitions as rules

_NAME_WORDS = re.compile(rules.CREDENTIAL_NAME_WORDS)
"""Words of a variable name (upper-cased) that say it holds a credential (HF_TOKEN, WANDB_API_KEY, DB_PASSWORD; not
MAX_TOKENS): the policy pack's ci-secret-variables-masked rule's own words, one definition."""

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
    ("a GitLab runner registration token", re.compile(r"GR1348941[A-Za-z0-9_-]{20}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a base64 PEM block (a kubeconfig's client-key-data)", re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{8,}")),
    ("a JSON Web Token", re.compile(r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}")),
)
"""Value shapes: at least every shape the policy pack's CREDENTIAL_VALUE refuses.

tests/config/test_credentials_agree.py holds the two together.
"""

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""A Scaleway secret key's shape, and every Scaleway id's: a credential in a variable whose name does not say id."""
_ID_NAME = re.compile(r"(?:^|_)IDS?$")
"""A variable name that says it holds an identifier (SCW_DEFAULT_PROJECT_ID, ORGANIZATION_IDS), not a key."""

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
MIN_ENVIRONMENT_SECRET = 8
"""Characters an environment credential needs before its value is redacted wherever it appears (a one-letter
value would blank every line)."""


def redact_credentials(text: str) -> str:
    """`text` with every credential-shaped part (a token, a key, a URL's userinfo) and the value of every
    credential of the environment (`SCW_SECRET_KEY`, `AWS_SECRET_ACCESS_KEY`, `GITLAB_TOKEN`: each variable
    whose name says credential) replaced by `<redacted>`: the one redactor, which every line gpu-ci shows goes
    through (`infra.untrusted.printable`), whatever field, key, file or reason quoted the value."""
    for secret in environment_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _USERINFO.sub(REDACTED + "@", text)
    text = _LEADING_USERINFO.sub(REDACTED + "@", text)
    for _, shape in _VALUE_SHAPES:
        text = shape.sub(REDACTED, text)
    return text


_environment: tuple[object, tuple[str, ...]] = (None, ())


def environment_secrets() -> tuple[str, ...]:
    """The values of this process's environment variables whose name says credential, longest first (one that
    holds another is redacted whole); read again whenever the environment changed."""
    global _environment  # noqa: PLW0603 - a cache of the environment, which is itself process-wide
    key = _environment_now()
    if _environment[0] != key:
        values = {value for name, value in os.environ.items() if credential_name(name) or name in _PROVIDER_ENV}
        found = sorted(
            (v for v in values if len(v) >= MIN_ENVIRONMENT_SECRET and not v.startswith("/")),  # a path: no secret
            key=len,
            reverse=True,
        )
        _environment = (key, tuple(found))
    return _environment[1]


def _environment_now() -> object:
    """What tells the environment changed: a copy of the mapping `os.environ` keeps its encoded variables in
    (CPython's `_data`, which `os.environ[...] = ...` and `del` update: compared in C, some 50 times cheaper than
    decoding every variable, and every line shown asks), else a hash of every variable."""
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict):
        return dict(data)
    return hash(frozenset(os.environ.items()))


_PROVIDER_ENV = frozenset(
    ("SCW_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "PULUMI_CONFIG_PASSPHRASE", "CI_JOB_JWT", "CI_JOB_JWT_V2")
)
"""Credentials of the environment that the name rule alone misses (an access key id, a passphrase's name
says PASSPHRASE but CI_JOB_JWT says nothing)."""


def credential_name(name: str) -> bool:
    """Whether a variable name says it holds a credential (HF_TOKEN, WANDB_API_KEY, ...)."""
    return _NAME_WORDS.search(name.upper()) is not None


SHORTEST_CREDENTIAL = 13
"""Characters the shortest text any of the value shapes matches holds (`glrt-` and 8 more): a shorter value is none
(tests/config/test_credentials_agree.py works it out from the patterns). Most values a spec holds are shorter: a
pool's name, a region, a node type."""


def credential_value(value: str) -> str | None:
    """What credential `value` looks like (e.g. "a Hugging Face token"), or None."""
    if len(value) < SHORTEST_CREDENTIAL:
        return None
    for what, shape in _VALUE_SHAPES:
        if shape.search(value):
            return what
    return None


def credential_kind(name: str, value: str) -> str | None:
    """What credential the variable `name: value` looks like, by its value first, then by its name; or None.

    A UUID is a Scaleway secret key unless the name says it is an id (`SCW_DEFAULT_PROJECT_ID`): the secret
    key has no other shape, and a name like `SCW_SECRETKEY` or `S3_SK` says nothing the name rule reads."""
    if what := credential_value(value):
        return what
    if UUID.search(value) and not _ID_NAME.search(name.upper()):
        return "a Scaleway secret key (a UUID, in a variable whose name does not end in _ID)"
    return "a credential by its name" if credential_name(name) else None


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
