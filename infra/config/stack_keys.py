"""The stack config's own keys (`namespace:key`), checked before the program reads one, each named in its file.

A stack file's top-level keys are read by three parties: the program (`gpu-ci:platform` and the stack secrets the
spec names), the providers (their namespaces' keys, infra.config.provider_keys) and the engine (`pulumi:`). A key
none of them reads is a typo that would otherwise pass: `gpu-ci:platfrom` ends in the SDK's "Missing required
configuration variable 'gpu-ci:platform'", the misspelled key never named; `gitlab:baseURL` leaves the provider on
its default URL. Each is one line naming the key and the closest key read. Pure: the program hands the keys in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager

from infra.config.errors import CONFIG_ROOT
from infra.config.provider_keys import PROVIDER_CONFIG_KEYS, known_keys
from infra.config.suggest import closest
from infra.untrusted import printable

ENGINE_NAMESPACE = "pulumi"
"""The engine's own namespace (`pulumi:disable-default-providers`, `pulumi:tags`): not checked here."""
MAX_SHOWN_KEY = 100
"""Characters of a key a line shows at most."""

_shown_file: str | None = None


def stack_file_name(stack: str) -> str:
    """The stack file a config error names: `Pulumi.<stack>.yaml`, where the CLI reads the stack's config, or the
    file `plan --config FILE` read (`shown_as`)."""
    return _shown_file or f"Pulumi.{stack}.yaml"


@contextmanager
def shown_as(name: str | None) -> Iterator[None]:
    """While the offline run lasts, config errors name `name` (the file it read), not `Pulumi.<stack>.yaml`."""
    global _shown_file  # noqa: PLW0603 - one run at a time (the harness runs the program in-process)
    before, _shown_file = _shown_file, name
    try:
        yield
    finally:
        _shown_file = before


def in_file(name: str, message: str) -> str:
    """Each line of `message` prefixed with the file it is about (`Pulumi.dev.yaml: platform.x=1: ...`)."""
    return "\n".join(f"{name}: {line}" for line in message.splitlines())


def _did_you_mean(suggestion: str | None) -> str:
    return f"; did you mean {printable(suggestion, MAX_SHOWN_KEY)}?" if suggestion else ""


def key_problems(keys: Iterable[str], project: str, secrets: Collection[str] | None = None) -> list[str]:
    """One line per top-level key nothing reads that is a typo or no key at all, sorted by key: a namespace no one
    reads, a key no provider takes, a key of the project's namespace close to one the program reads and the stack
    lacks. `secrets` the stack secrets the spec names (None before the spec is read: then only the spec's own key
    is looked for). A key of the project's that is no typo is `unread_keys`' warning."""
    keys = sorted(set(keys))
    ours = {key.partition(":")[2] for key in keys if key.partition(":")[0] == project}
    program_keys = [CONFIG_ROOT, *sorted(secrets or ())]
    problems = []
    for key in keys:
        namespace, _, name = key.partition(":")
        shown = printable(key, MAX_SHOWN_KEY)
        if namespace == ENGINE_NAMESPACE or (namespace == project and name in program_keys):
            continue
        if namespace == project:  # a typo: close to a key the program reads that the stack lacks
            lacking = [k for k in ([CONFIG_ROOT] if secrets is None else program_keys) if k not in ours]
            if suggestion := closest(name, lacking):
                what = "the program reads " + ", ".join(f"{project}:{k}" for k in program_keys)
                problems.append(f"{shown}: unknown key ({what}){_did_you_mean(f'{project}:{suggestion}')}")
        elif namespace in PROVIDER_CONFIG_KEYS:
            if name not in known_keys(namespace):
                suggestion = closest(name, known_keys(namespace))
                problems.append(
                    f"{shown}: unknown key of the {namespace} provider, which would ignore it"
                    f"{_did_you_mean(suggestion and f'{namespace}:{suggestion}')}"
                )
        else:
            read = ", ".join(f"{n}:" for n in (project, *sorted(PROVIDER_CONFIG_KEYS), ENGINE_NAMESPACE))
            suggestion = _other_namespace(namespace, name, project)
            problems.append(f"{shown}: unknown namespace, nothing reads it (read: {read}){_did_you_mean(suggestion)}")
    return problems


def _other_namespace(namespace: str, name: str, project: str) -> str | None:
    """The key `namespace:name` is most likely a typo of, in a namespace something reads (`gpu-cl:platform` ->
    `gpu-ci:platform`); the namespaces read when none is close."""
    readers = [project, *sorted(PROVIDER_CONFIG_KEYS)]
    found = closest(namespace, readers)
    if found is None:
        return None
    keys = [CONFIG_ROOT] if found == project else list(known_keys(found))
    if name in keys:
        return f"{found}:{name}"
    return f"{found}:{key}" if (key := closest(name, keys)) else None


def unread_keys(keys: Iterable[str], project: str, secrets: Collection[str]) -> list[str]:
    """One warning per key of the project's namespace that the program does not read (a secret the spec no longer
    names, or one it should name): harmless, but a sign the spec and the stack disagree."""
    program_keys = {CONFIG_ROOT, *secrets}
    reads = ", ".join(f"{project}:{k}" for k in sorted(program_keys))
    return [
        f"{printable(key, MAX_SHOWN_KEY)}: nothing reads this key (the program reads {reads}): name it in the spec "
        f"or remove it (pulumi config rm {printable(key, MAX_SHOWN_KEY)})"
        for key in sorted(set(keys))
        if key.partition(":")[0] == project and key.partition(":")[2] not in program_keys
    ]


def missing_spec(project: str) -> str:
    """The one line for a stack without its spec (the SDK's own is two, the second a tab and a command that cannot
    set an object)."""
    return (
        f"{project}:{CONFIG_ROOT}: missing: the stack holds no platform spec (every key: docs/config-reference.md; "
        f"Pulumi.dev.yaml is a complete one)"
    )


def missing_secret(project: str, key: str) -> str:
    """The one line for a stack secret the spec names and the stack lacks."""
    return f"{project}:{key}: missing: the spec reads this stack secret: pulumi config set --secret {key} ..."
