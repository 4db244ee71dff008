"""The pipeline sources a job's `rules:` name, against those the runners of a pool with held slots hold a tag
for (pure: no Pulumi import).

On a pool with `merge_request_slots` the templates' tag is `<pool>-${CI_PIPELINE_SOURCE}`, and the runners hold
it for every source GitLab lists (`infra.model.routes.PIPELINE_SOURCES`, checked against GitLab's docs by the
tests). A job in a pipeline of any other source (one GitLab adds later) gets a tag no runner holds: it stays
pending, GitLab drops it as stuck after an hour (no runner could take it), and the templates retry that twice,
so it fails after three hours. Pipelines of such a source are only created for a job whose rules let it in
one: a rule that names a source not in the list is a warning (a typo never matches; a new source needs the list
updated and a `pulumi up`, which gives the runners its tag).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from infra.model.routes import PIPELINE_SOURCES, SOURCE_VARIABLE, source_tag
from infra.sim.gitlab import GITLAB_PENDING_STUCK_MINUTES

_VARIABLE = rf"\$(?:\{{{SOURCE_VARIABLE}\}}|{SOURCE_VARIABLE}\b)"
_LITERAL = r"(?P<q>[\"'])(?P<value>[^\"']*)(?P=q)"
_COMPARISONS = (
    re.compile(rf"{_VARIABLE}\s*(?:==|!=)\s*{_LITERAL}"),
    re.compile(rf"{_LITERAL}\s*(?:==|!=)\s*{_VARIABLE}"),
)


def named_sources(rules: Any) -> list[str]:
    """The values `rules: if:` compare `CI_PIPELINE_SOURCE` with (`==` or `!=`, either side), in order."""
    return [
        match["value"] for text in _conditions(rules) for pattern in _COMPARISONS for match in pattern.finditer(text)
    ]


def _conditions(rules: Any) -> Iterator[str]:
    pending = [rules]
    while pending:
        value = pending.pop(0)
        if isinstance(value, list):
            pending[:0] = value
        elif isinstance(value, dict) and isinstance(value.get("if"), str):
            yield value["if"]


def check_sources(rules: Any, pool: str, warning: Callable[[str], None]) -> None:
    """A warning per source the rules name that the pool's runners hold no tag for."""
    for source in dict.fromkeys(named_sources(rules)):
        if source in PIPELINE_SOURCES:
            continue
        warning(
            f"rules: compare {SOURCE_VARIABLE} with {source!r}, a source pool {pool}'s runners hold no tag for: in "
            f"such a pipeline the job's tag {source_tag(pool, source)} reaches no runner, it stays pending and "
            f"GitLab drops it as stuck after {GITLAB_PENDING_STUCK_MINUTES} min, twice retried (a typo, or a source "
            "GitLab added since: add it to PIPELINE_SOURCES in infra/model/routes.py, then `pulumi up`)"
        )
