"""Which profile a GitLab job belongs to (pure: no GitLab, no Pulumi).

In this order, each step narrowing the candidates and deciding when one profile is left:
1. the runner that ran it: its description names one pool's runner (with one runner per GPU pool), or a
   pool name is a word of it; the pool's profiles are the candidates (a pool of one profile decides);
2. the job's tags: a profile whose CI template carries exactly these tags (or, failing that, the only one
   whose tags the job carries);
3. the job's name: a token that is a model family of a profile (`train-validate-dqn`, `hyperopt-tft`).
A job none of them decides is not a training job (None).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from infra.config.profiles import name_tokens

if TYPE_CHECKING:
    from infra.model.platform import Platform

_WORD_SPLIT = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class ProfileKey:
    """What identifies a profile's jobs: its pool, its families, the tags its CI template carries."""

    name: str
    pool: str
    families: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class RunnerKey:
    """One of the platform's runners: the pool it serves and how GitLab shows it in a job."""

    pool: str
    description: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Routing:
    """The platform as the mapping sees it."""

    profiles: tuple[ProfileKey, ...]
    runners: tuple[RunnerKey, ...] = ()
    pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobFacts:
    """What a job says about itself: its name, its tags, the runner that ran it (if any)."""

    name: str
    tags: tuple[str, ...] = ()
    runner_description: str | None = None
    runner_tags: tuple[str, ...] = ()


def routing_of(platform: Platform) -> Routing:
    """The adapter from the derived model: the one place that knows where tags and runners come from.

    One runner per GPU pool: its description ends with its pool's name and its tags hold it, and each
    profile's template carries tags exactly one runner holds.
    """
    profiles = tuple(
        ProfileKey(name, profile.pool, tuple(profile.families), tuple(profile.tags))
        for name, profile in sorted(platform.profiles.items())
    )
    runners = tuple(
        RunnerKey(runner.pool, runner.description, tuple(runner.tags)) for _, runner in sorted(platform.runners.items())
    )
    return Routing(profiles=profiles, runners=runners, pools=tuple(sorted(platform.pools)))


def runner_pool(job: JobFacts, routing: Routing) -> str | None:
    """The pool whose runner ran the job, if the runner says so unambiguously."""
    if job.runner_description is None:
        return None
    described = {r.pool for r in routing.runners if r.description and r.description == job.runner_description}
    if len(described) == 1:
        return described.pop()
    pools = set(routing.pools) | {r.pool for r in routing.runners}
    tagged = pools & set(job.runner_tags)
    if len(tagged) == 1:
        return tagged.pop()
    worded = pools & set(_WORD_SPLIT.split(job.runner_description.lower()))
    return worded.pop() if len(worded) == 1 else None


def profile_of(job: JobFacts, routing: Routing) -> str | None:
    """The profile of `job`, or None when it is not a training job (or nothing decides between profiles)."""
    candidates = list(routing.profiles)
    pool = runner_pool(job, routing)
    if pool is not None:
        on_pool = [p for p in candidates if p.pool == pool]
        if len(on_pool) == 1:
            return on_pool[0].name
        candidates = on_pool or candidates
    tagged = _narrow_by_tags(candidates, job.tags)
    if tagged:
        if len(tagged) == 1:
            return tagged[0].name
        candidates = tagged
    tokens = name_tokens(job.name)
    named = [p for p in candidates if tokens & set(p.families)]
    return named[0].name if len(named) == 1 else None


def _narrow_by_tags(candidates: list[ProfileKey], tags: Iterable[str]) -> list[ProfileKey] | None:
    """Profiles whose template tags equal the job's, else the ones whose tags the job carries; None: no help."""
    job_tags = set(tags)
    if not job_tags:
        return None
    exact = [p for p in candidates if p.tags and set(p.tags) == job_tags]
    if exact:
        return exact
    carried = [p for p in candidates if p.tags and set(p.tags) <= job_tags]
    return carried or None
