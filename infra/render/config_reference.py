"""The config reference (docs/config-reference.md), generated from the spec's models (pure: no Pulumi import).

Every key of `gpu-ci:platform` is a field of `PlatformSpec` or of a model nested in it; its docstring is
read from the model's source (the string right after each field, as pydantic's `use_attribute_docstrings`
would, but only when the reference is made: parsing every model's source at import would slow down every
`plan` and `pulumi up`). Walking the models gives one table per section
(key path, type, default, constraints, description), so the reference cannot drift from what `load_spec`
accepts: a test compares the committed file with this text.
"""

from __future__ import annotations

import ast
import decimal
import inspect
import textwrap
import typing
from functools import cache
from types import NoneType, UnionType
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from infra.catalog import BUILTIN_CATALOG, PRICES_AS_OF
from infra.config.base import CpuQuantity, Duration, MemoryQuantity
from infra.config.platform import PlatformSpec
from infra.quantity import Cpu, Memory

REGENERATE = "venv/bin/python -m infra docs"
"""The command that rewrites docs/config-reference.md."""

MAP_KEYS = {"node_types": "<TYPE>", "pools": "<pool>", "profiles": "<profile>", "variables": "<NAME>"}
"""How a map's key is written in key paths (`pools.<pool>.zone`); other maps use `<name>`."""

_VALIDATED_TYPES = {
    typing.get_args(Duration)[1].func: "duration",
    typing.get_args(CpuQuantity)[1].func: "CPU quantity",
    typing.get_args(MemoryQuantity)[1].func: "memory quantity",
}
"""Types that are a plain annotation plus a parsing validator, recognised by the validator."""

_PLAIN_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", decimal.Decimal: "decimal"}

PREAMBLE = f"""\
# Config reference

<!-- Generated from the spec's models by `{REGENERATE}`: do not edit by hand. A key's text is its field's
docstring in infra/config/; a test fails when this file and the models disagree. -->

Everything lives under one structured stack key, `gpu-ci:platform`, set with
`pulumi config set --path 'platform.<key>' <value>` (snake_case keys) or edited in `Pulumi.<stack>.yaml`.
Unknown keys are errors, so a typo is never silently ignored. Every problem is reported before any
resource is registered, one line each, naming the key and the value:
`platform.pools.ci-compile.node_type='L4-1-24GB': unknown node type; did you mean 'L4-1-24G'? ...`.
The limits of each value and the full list of messages are in [config-limits.md](config-limits.md).

In the tables, `<pool>`, `<profile>`, `<TYPE>` and `<NAME>` stand for a map's keys; "none" means the key
may be left out (the text says what that means); constraints are those the type enforces, and the
cross-key checks at the end apply on top.

## Outside `gpu-ci:platform`

The stack also holds the GitLab provider's config and the secrets the spec names. `__main__.py` reads
exactly these, and refuses a secret stored in plain text.

| key | meaning |
|---|---|
| `gitlab:baseUrl` | the GitLab API URL, `<gitlab.url>/api/v4/` (provider config) |
| `gitlab:token` | secret: the GitLab access token Pulumi acts with ([operations.md](operations.md)) |
| `scaleway:access_key`, `scaleway:secret_key` | optional (the second a secret): the Scaleway key, instead of `SCW_*` |
| `gpu-ci:registry_pull_secret_key` | secret, for a private registry: its pull key ([security.md](security.md)) |
| `gpu-ci:runner_cache_access_key`, `gpu-ci:runner_cache_secret_key` | secrets, with `runner.cache`: its S3 key |
| `gpu-ci:<key>` | secret, for each `ci.variables.<NAME>.secret: <key>` |
"""

CHECKS = """\
## Checks across keys

Besides each key's own constraints, `load_spec` checks, before anything is registered:

- node types exist in the catalogue (built in or under `node_types`; a new type states `vcpus`,
  `memory_gib`, `gpus` and `eur_per_hour`) and are sold in the pool's zone, which is a zone of `region`;
- quantities parse strictly (`3 cores`, `8m` memory and `1Gi` CPU are refused); limits are at least requests;
- `min_size <= max_size`, `max_size >= 1`, a fixed pool (`autoscaling: false`) has `min_size == max_size`;
  GPU pools have at least 100 GB of root volume;
- a mutualized cluster (`cluster.type: kapsule`) has an always-on pool (`min_size >= 1`) for the runner
  manager and kube-system; `cluster.existing_id` is in `region`; `auto_upgrade` needs a minor `version`;
- every profile's pool exists and has a GPU; template names and families are unique across profiles; every
  GPU pool is one a profile targets (else it is dead config that `up` would create and protect);
- the jobs sharing a node (GPU sharing replicas x requests) fit its allocatable CPU and memory (memory limits
  that overcommit it are a warning); sharing needs a GPU and at least 2 replicas, MPS at most 48; a profile's
  `gpu_memory_gb` fits its GPU (under MPS, one replica's share; `replicas x gpu_memory_gb` above the GPU
  under time-slicing is a warning);
- pool labels are valid and do not use a reserved prefix (`k8s.scaleway.com/`, `kubernetes.io/`, `k8s.io/`,
  `node.kubernetes.io/`, `nvidia.com/`);
- the runner's default pool is one a profile targets; the manager pool exists, is always-on and has no GPU;
- each runner (per GPU pool a profile targets, and the runner of its held `merge_request_slots`) has at
  least one job slot (held slots leave the pool's shared runner one), a Helm release name of at most 53
  characters; the job timeout holds one attempt's `poll_timeout` (derived from `node_wait_tolerance`) plus
  the pool's longest job; the default tags and each template's tags, expanded for every pipeline source,
  are held by their pool's runners only (`pool_tags` must not hold all of `tags`);
- warm windows and held slots are on GPU pools, windows within `max_size`, and do not overlap each other;
  the GPU operator's namespace is not the runners'; the namespaces gpu-ci creates (the runners', the
  placeholders') are none of the cluster's own (`default`, `kube-*`); the placeholders' images are image
  references (no scheme, `user:password@` or glob);
- times are `HH:MM` in ASCII digits, time zones IANA names of a place (not `localtime`, `posixrules`,
  `Factory`); a kind's p90 does not spread its run times past a week at their p99;
- a group runner scope or group variables name `gitlab.group`, and the project is in it;
- CI variable names are valid and do not shadow what gpu-ci derives (`REGISTRY`), the routing
  (`KUBERNETES_*`) or GitLab's predefined variables (`CI_*`, `GITLAB_*`), nor (CI or profile variables)
  disarm a guard (`NVIDIA_*`, `CUDA_VISIBLE_DEVICES`, `CUDA_MPS_*`, the runner's `FF_*` feature flags);
- no value anywhere looks like a credential (it would be committed in clear and printed);
- workload profiles exist, each with `kinds` or `jobs_per_day` and `minutes_per_job`; the baseline is a GPU
  node type of the catalogue.

A problem caused by another (a profile on an unknown pool) is reported once, where it is.
"""


def config_reference() -> str:
    """The whole reference: preamble, one table per section of the spec, cross-key checks, the catalogue."""
    sections: list[str] = []
    _walk(PlatformSpec, "", "Top level", sections, {})
    return "\n".join([PREAMBLE, "## `gpu-ci:platform`\n", *sections, CHECKS, _catalog_table()])


def _walk(model: type[BaseModel], prefix: str, title: str, sections: list[str], documented: dict[type, str]) -> None:
    """Append the section of `model` (keys under `prefix`), then the sections of the models it nests."""
    documented[model] = prefix.rstrip(".") or "platform"
    rows, nested = [], []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        variants = _variants(field)
        if variants:
            tag = field.discriminator
            choices = ", ".join(f"`{tag}: {label}`" for label, _ in variants)
            rows.append((key, f"object, by `{tag}`: {choices}", _default(field), "", _description(model, name, field)))
            nested += [(variant, key, f"`{key}` with `{tag}: {label}`") for label, variant in variants]
            continue
        inner, kind = _inner_model(field.annotation)
        if inner is not None and kind == "map":
            key_of_map = f"{key}.{MAP_KEYS.get(name, '<name>')}"
            shape = f"map: `{MAP_KEYS.get(name, '<name>')}` → object (`{key_of_map}`)"
            target = key_of_map
        elif inner is not None and kind == "list":
            shape, target = f"list of objects (`{key}[]`)", f"{key}[]"
        elif inner is not None:
            shape, target = f"object (`{key}`)", key
        else:
            shape, target = _type_name(field), None
        if inner is not None and inner in documented:
            shape = f"object, the fields of `{documented[inner]}`"
        elif inner is not None and target is not None:
            nested.append((inner, target, f"`{target}`"))
        rows.append((key, shape, _default(field), _constraints(field), _description(model, name, field)))
    doc = " ".join((model.__doc__ or "").split())
    lines = [f"### {title}\n", f"{doc}\n" if doc else "", "| key | type | default | constraints | description |"]
    lines.append("|---|---|---|---|---|")
    lines += ["| " + " | ".join(_cell(c) for c in (f"`{r[0]}`", *r[1:])) + " |" for r in rows]
    sections.append("\n".join(line for line in lines if line) + "\n")
    for inner, target, heading in nested:
        _walk(inner, f"{target}.", heading, sections, documented)


def _inner_model(annotation: Any) -> tuple[type[BaseModel] | None, Literal["object", "map", "list"] | None]:
    """The model a field holds directly (`object`), as a map's values (`map`) or a list's items (`list`); else
    (None, None)."""
    annotation = _without_none(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, "object"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    value = args[1] if origin is dict else args[0] if origin is tuple and args else None
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value, "map" if origin is dict else "list"
    return None, None


def _variants(field: FieldInfo) -> list[tuple[str, type[BaseModel]]]:
    """A discriminated union of models (`gpu_sharing`): (tag value, model) per variant; [] for other fields."""
    tag = field.discriminator
    if not isinstance(tag, str) or typing.get_origin(field.annotation) not in (typing.Union, UnionType):
        return []
    variants = []
    for model in typing.get_args(field.annotation):
        (label,) = typing.get_args(model.model_fields[tag].annotation)
        variants.append((str(label), model))
    return variants


def _without_none(annotation: Any) -> Any:
    """`X | None` -> X (None is shown as the default instead), `Annotated[X, ...]` -> X."""
    if typing.get_origin(annotation) in (typing.Union, UnionType):
        args = [a for a in typing.get_args(annotation) if a is not NoneType]
        if len(args) == 1:
            annotation = args[0]
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _type_name(field: FieldInfo) -> str:
    for meta in field.metadata:
        name = _VALIDATED_TYPES.get(getattr(meta, "func", None))
        if name:
            return name
    return _annotation_name(_without_none(field.annotation))


def _annotation_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return "string" if all(isinstance(a, str) for a in args) else "choice"
    if origin is tuple:
        return f"list of {_annotation_name(_without_none(args[0]))}"
    if origin is dict:
        return f"map: `<name>` → {_annotation_name(args[1])}"
    if annotation in (Cpu, Memory):
        return "CPU quantity" if annotation is Cpu else "memory quantity"
    return _PLAIN_TYPES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _constraints(field: FieldInfo) -> str:
    parts = []
    annotation = _without_none(field.annotation)
    if typing.get_origin(annotation) is Literal:
        choices = typing.get_args(annotation)
        parts.append(f"`{choices[0]}`" if len(choices) == 1 else "one of " + ", ".join(f"`{a}`" for a in choices))
    symbols = {
        annotated_types.Ge: ("≥", "ge"),
        annotated_types.Gt: (">", "gt"),
        annotated_types.Le: ("≤", "le"),
        annotated_types.Lt: ("<", "lt"),
    }
    for meta in field.metadata:
        if type(meta) in symbols:
            symbol, attr = symbols[type(meta)]
            parts.append(f"{symbol} {getattr(meta, attr)}")
        elif isinstance(meta, annotated_types.MinLen):
            parts.append(f"at least {meta.min_length} item{'s' if meta.min_length != 1 else ''}")
        elif isinstance(meta, annotated_types.MaxLen):
            parts.append(f"at most {meta.max_length} items")
    return ", ".join(parts)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return _value(field.default_factory())  # type: ignore[call-arg]
    if field.default is PydanticUndefined:
        return "**required**"
    return _value(field.default)


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        if value.model_fields_set:  # a chosen variant (gpu_sharing's `strategy: none`): show what it sets
            shown = ", ".join(f"{k}: {v}" for k, v in value.model_dump(include=value.model_fields_set).items())
            return f"`{{{shown}}}`"
        return "its defaults"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple | list):
        return f"`[{', '.join(str(v) for v in value)}]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    if isinstance(value, str) and not value:
        return '`""`'
    return f"`{value}`"


def _description(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    return " ".join((field.description or field_docstring(model, name)).split())


def field_docstring(model: type, name: str) -> str:
    """The docstring written under a field of `model` ("" if none)."""
    return _attribute_docstrings(model).get(name, "")


@cache
def _attribute_docstrings(model: type) -> dict[str, str]:
    """Each field's docstring: the string literal right after its annotated assignment, in the class (or a
    base class) where the field is written."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if klass is object or not klass.__module__.startswith("infra."):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0]
        if not isinstance(body, ast.ClassDef):
            continue
        for statement, following in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


def _cell(text: str) -> str:
    """A table cell: pipes escaped (inside code spans too, as GitHub's tables need)."""
    return text.replace("|", "\\|")


def _catalog_table() -> str:
    rows = [
        "## Built-in node types\n",
        f"Scaleway's figures as recorded from its Instance API on {PRICES_AS_OF} (EUR per hour, excluding VAT).",
        "Prices move (+5 % in June 2026): re-read them with `scw instance server-type list zone=fr-par-2 -o json`",
        "and override `node_types.<TYPE>.eur_per_hour`. Zones are those that sold the type then.\n",
        "| type | vCPU | memory (GiB) | GPU | EUR/h | zones |",
        "|---|---|---|---|---|---|",
    ]
    for name in BUILTIN_CATALOG.names():
        node = BUILTIN_CATALOG[name]
        gpu = node.gpu_summary or "none"
        zones = ", ".join(sorted(node.zones)) if node.zones is not None else "any"
        price = f"{float(node.eur_per_hour):.6f}".rstrip("0").rstrip(".")
        rows.append(f"| `{name}` | {node.vcpus} | {node.memory_gib} | {gpu} | {price} | {zones} |")
    return "\n".join(rows) + "\n"
