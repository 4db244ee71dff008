"""Each GPU pool's price against the old way (pure): a node of the reference type running one job at a time."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from infra.model.platform import Platform


@dataclass(frozen=True)
class PriceRow:
    """A GPU pool's price against a reference node running one job at a time (the old way)."""

    pool: str
    node_type: str
    eur_per_hour: Fraction
    jobs_per_node: int
    reference: str
    reference_eur_per_hour: Fraction

    @property
    def node_ratio(self) -> Fraction:
        """This node's hourly price as a fraction of the reference's."""
        return self.eur_per_hour / self.reference_eur_per_hour

    @property
    def eur_per_job_hour(self) -> Fraction:
        """What one job slot costs per hour when the node is full."""
        return self.eur_per_hour / max(1, self.jobs_per_node)

    @property
    def job_ratio(self) -> Fraction:
        """A job-hour here as a fraction of a job-hour alone on the reference node."""
        return self.eur_per_job_hour / self.reference_eur_per_hour


def price_rows(platform: Platform) -> list[PriceRow]:
    """Each GPU pool against the baseline node type (or, without a workload, the dearest GPU pool's type)."""
    spec = platform.spec
    gpu_pools = [pool for pool in platform.pools.values() if pool.is_gpu]
    if not gpu_pools:
        return []
    if spec.workload is not None:
        reference = spec.workload.baseline.node_type
    else:
        reference = max(gpu_pools, key=lambda p: (p.eur_per_hour, p.node_type)).node_type
    reference_price = spec.catalog[reference].eur_per_hour
    return [
        PriceRow(pool.name, pool.node_type, pool.eur_per_hour, pool.jobs_per_node, reference, reference_price)
        for pool in gpu_pools
    ]
