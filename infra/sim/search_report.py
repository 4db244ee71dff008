"""What `recommend`'s search found and did (pure): its report, its candidates, and the rules it shares.

`infra.sim.search` fills a `SearchReport`; `python -m infra recommend` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from infra.config.errors import Problem
from infra.model.platform import Platform
from infra.sim.combine import Combination, Target
from infra.sim.confirm import Confirmation
from infra.sim.levers import Change, Levers, PoolSpace, changes
from infra.sim.pool_runs import PoolRun
from infra.sim.refine import Refined
from infra.sim.target_cost import TargetCost

MAX_RUNS = 300
"""Pool candidates simulated at most by one search (each in every variant)."""


class SearchError(ValueError):
    """The stack gives the search nothing to do (no target, no merge-request job, refused as it stands)."""


@dataclass(frozen=True)
class Candidate:
    """A pool's candidate, bounded, not yet derived nor simulated."""

    pool: str
    levers: Levers
    floor: Fraction
    overs: tuple[int, ...]
    """Merge-request jobs certainly past the target (a lower bound), per variant (`VARIANTS`)."""


@dataclass
class SearchReport:
    """What the search found, and what it did."""

    target: Target
    today: Combination
    recommended: Combination | None
    closest: Combination | None
    """Without a recommendation: the candidate with the lowest p95 (cheapest among them)."""
    front: list[Combination]
    pools: list[str]
    spaces: dict[str, PoolSpace]
    candidates: int
    simulated: int
    skipped: dict[str, int] = field(default_factory=dict)
    runs: dict[str, list[PoolRun]] = field(default_factory=dict)
    """Every pool's simulated candidates."""
    cut: bool = False
    max_runs: int = MAX_RUNS
    confirmations: dict[tuple[object, ...], Confirmation] = field(default_factory=dict)
    """Every combination confirmed over the weeks, by its key."""
    weeks: int = 1
    confidence: Fraction = Fraction(9, 10)
    unconfirmed: Combination | None = None
    """Without a recommendation: the cheapest combination that met the target in the first week, though not in
    enough of the weeks."""
    bound: TargetCost | None = None
    """The target's bound over the weeks (`infra.sim.target_cost`)."""
    refined: Refined | None = None
    """The second step (`infra.sim.refine`): from what, and the moves it took."""
    keep_sizes: bool = False
    """Every pool's `max_size` kept as it is (`recommend --keep-sizes`)."""
    first_runs: dict[str, int] = field(default_factory=dict)
    """Per pool, how many of `runs` the first step simulated (the second's come after)."""
    means: dict[tuple[object, ...], Fraction] = field(default_factory=dict)
    """Mean EUR/week over the weeks, of the combinations simulated on every week."""

    def changes(self, combination: Combination) -> list[Change]:
        """The spec changes of a combination (the cluster's scale-down said once)."""
        found: dict[tuple[str, ...], object] = {}
        for run in combination.runs:
            found.update(changes(run.pool, self.spaces[run.pool].today, run.levers))
        return list(found.items())

    def mean_eur(self, combination: Combination) -> Fraction | None:
        """The combination's mean EUR/week over the weeks, as estimated (None: not simulated on every week)."""
        return self.means.get(combination.key)


def pack_refusals(platform: Platform) -> list[Problem]:
    """The spec's warnings that are a pack rule's verdict with its default config, each naming its rule
    (`Problem.policy`; the rules' one definition: `policy/policies/definitions.py`)."""
    return [warning for warning in platform.warnings if warning.policy is not None]


def pareto(combinations: Sequence[Combination]) -> list[Combination]:
    """The combinations no other is both at most as costly and at most as slow as (strictly one of them)."""
    kept = [
        c
        for c in combinations
        if not any(
            o.eur_per_week <= c.eur_per_week
            and o.score <= c.score
            and (o.eur_per_week, o.score) != (c.eur_per_week, c.score)
            for o in combinations
        )
    ]
    return sorted(kept, key=lambda c: (c.eur_per_week, c.score))
