"""The Kubernetes side (pure): each pool's nodes, the scheduler binding Pending pods, the GPUs the jobs share,
the cluster-autoscaler adding and removing nodes, and what the nodes bill.

- A taken job's pod is Pending until a ready node of its pool has a free slot. The scheduler binds Pending
  pods in creation order (taken order), each on the ready node with the most free slots (kube-scheduler's
  default LeastAllocated scoring spreads pods of the same size), and within the node on the GPU with the
  fewest jobs (the device plugin's distributed allocation of shared replicas). A bound pod runs at once.
- A running job needs `minutes` of its GPU alone. It progresses at rate 1/slowdown, re-evaluated at every
  change on its GPU (processor sharing): time-slicing slowdown = max(1, u x n), n = jobs on that GPU now;
  MPS slowdown = max(1, u x replicas) always (each client is capped at 1/replicas of the GPU), replicas =
  `gpu_replicas` (default: slots_per_node / gpus_per_node, rounded up); without a `gpu_utilization` u: 1.
- The autoscaler: whenever a pool has Pending pods (jobs and placeholders) beyond what its nodes still
  booting hold, it adds nodes for them, up to `max_nodes`. It counts both with the pool's template node
  (`SimPool.template`): on Scaleway the physical GPUs, so N Pending job pods ask for N nodes (one per GPU),
  not N / replicas, and a booting node holds one of them. Each node is ready its own boot later (drawn per
  node, `infra.sim.boots`). A node whose pods have gone (timed out) still comes up and idles until scale-down.
- Scale-down: a ready node of a pool, not warm, empty since t is removed at max(t + scale_down_unneeded,
  creation + scale_down_delay_after_add) if still empty and no pod of its pool is Pending (the real
  autoscaler's delay-after-add counts from the last scale-up anywhere in the cluster; the model, per node).
- Stock-outs: in a pool's stock-out window every scale-up fails; the autoscaler adds the nodes at its end.
- Warm windows: `nodes` placeholder pods (one per node, a priority below the jobs' and at or above the
  autoscaler's expendable cutoff), each holding a slot of a ready node: the scheduler binds them after the
  jobs, a Pending one makes the autoscaler add a node, and a node holding one is not scaled down. A job that
  finds no free slot preempts a placeholder; its Deployment recreates it, Pending, so the autoscaler adds a
  node for it (the overprovisioning pattern keeps its headroom, and bills it). At the window's end they go.
- Billing: per started minute per node, from its creation (the cold start is billed) to its removal. Warm
  nodes (`warm_nodes`, the pool's min_size) are up from minute 0 and billed to the last job's end.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from infra.sim.scenario import SimPool, to_ms
from infra.sim.schedule import FINISH, NODE_READY, RESUME, SCALE_DOWN, WARM, Schedule
from infra.sim.state import FULL_RATE, FULL_SPEED, JobState, NodeState, PoolState


@functools.lru_cache(maxsize=4096)
def slowdown(utilization: Fraction | None, sharers: int, *, mps: bool, replicas: int) -> Fraction:
    """How much longer a job takes: time-slicing max(1, u x jobs on its GPU); MPS max(1, u x replicas)."""
    if utilization is None:
        return FULL_SPEED
    return max(FULL_SPEED, utilization * (replicas if mps else sharers))  # FULL_SPEED itself when it is the max


def _boot_ms(minutes: Fraction) -> int:
    return to_ms("boot", minutes)


class Cluster:
    """The pools' nodes, their pods and GPUs, and the autoscaler; it schedules its own events."""

    def __init__(self, pools: tuple[SimPool, ...], schedule: Schedule) -> None:
        self.schedule = schedule
        self.pools = {
            p.name: PoolState(
                p,
                p.boots.draws(p.cold_start_seed),
                to_ms("unneeded", p.scale_down_unneeded_minutes),
                to_ms("delay", p.scale_down_delay_after_add_minutes),
            )
            for p in pools
        }
        self.recheck: list[NodeState] = []
        for pool in self.pools.values():
            for _ in range(pool.spec.warm_nodes):
                node = self._add_node(pool, 0, warm=True)
                node.ready = True
            for start, end in pool.spec.stockouts:
                first, last = to_ms("stockout", start), to_ms("stockout", end)
                pool.stockouts.append((first, last))
                schedule.push(last, RESUME, pool)
            starts = {to_ms("warm", start) for start, _, _ in pool.spec.warm_windows}
            for start, end, nodes in pool.spec.warm_windows:
                schedule.push(to_ms("warm", start), WARM, (pool, nodes))
                if to_ms("warm", end) not in starts:  # a count that changes is one change, not an end and a start
                    schedule.push(to_ms("warm", end), WARM, (pool, 0))

    # pods

    def add_pod(self, job: JobState) -> None:
        """A runner took the job: its pod is Pending in its pool."""
        pool = self.pools[job.spec.pool]
        pool.pending.append(job)
        pool.pending_count += 1
        pool.pods += 1
        pool.peak_pods = max(pool.peak_pods, pool.pods)

    def remove_pod(self, job: JobState, previous: str, now: int) -> None:
        """The job ended in state `previous` (pending or running): its pod goes, its GPU share is freed."""
        pool = self.pools[job.spec.pool]
        pool.pods -= 1
        if previous == "pending":
            pool.pending_count -= 1
        elif previous == "running":
            assert job.node is not None
            sharers = job.node.gpus[job.gpu]
            self._advance(sharers, now)
            sharers.remove(job)
            job.node.used -= 1
            self._reschedule(sharers, pool, now)
            self._maybe_idle(job.node, now)

    def bind(self, now: int) -> bool:
        """The scheduler binds Pending pods to free slots of ready nodes, jobs first (preempting a placeholder
        when no slot is free), then placeholders; True when it bound a job."""
        bound = False
        for pool in self.pools.values():
            while pool.pending_count:
                job = pool.pending[0]
                if job.state != "pending":
                    pool.pending.popleft()
                    continue
                node = pool.least_allocated()
                if node is None and (node := pool.preemptible()) is not None:
                    node.placeholder = False  # preempted: its Deployment recreates it, Pending
                    pool.placed -= 1
                if node is None:
                    break
                pool.pending.popleft()
                self._start(job, pool, node, now)
                bound = True
            while pool.warm_target > pool.placed and (node := pool.least_allocated(placeholder=True)) is not None:
                node.placeholder = True
                pool.placed += 1
                node.empty_since = None  # not empty: a scale-down due is void
                node.version += 1
        return bound

    def _start(self, job: JobState, pool: PoolState, node: NodeState, now: int) -> None:
        pool.pending_count -= 1
        gpus = node.gpus
        gpu = 0 if len(gpus) == 1 else min(range(len(gpus)), key=lambda i: (len(gpus[i]), i))
        job.state, job.started, job.node, job.gpu = "running", now, node, gpu
        job.remaining, job.since = job.work * job.scale, now
        node.empty_since = None
        node.version += 1
        node.used += 1
        sharers = node.gpus[gpu]
        self._advance(sharers, now)
        sharers.append(job)
        self._reschedule(sharers, pool, now)

    # the GPUs

    @staticmethod
    def _advance(sharers: list[JobState], now: int) -> None:
        """Count the work done on a GPU since the last change, at each job's rate then."""
        for job in sharers:
            if now != job.since:
                job.remaining -= (now - job.since) * job.step
                job.since = now

    def _reschedule(self, sharers: list[JobState], pool: PoolState, now: int) -> None:
        """New rates on a GPU; a job whose rate is unchanged keeps its finish event (same instant, exactly)."""
        count, mps, replicas = len(sharers), pool.spec.mps, pool.spec.replicas
        for job in sharers:
            utilization = job.utilization
            if utilization is None:
                rate = FULL_RATE
            elif (known := job.rates.get(count)) is not None:
                rate = known
            else:
                found = slowdown(utilization, count, mps=mps, replicas=replicas)
                rate = job.rates[count] = (found.numerator, found.denominator)
            if job.version and rate == job.rate:
                continue
            numerator, denominator = job.rate = rate
            if job.scale % numerator:  # counted in finer units from now on (exactly the same work)
                finer = numerator // math.gcd(job.scale, numerator)
                job.scale *= finer
                job.remaining *= finer
            job.step = job.scale * denominator // numerator
            job.version += 1
            remaining = job.remaining
            # ceil(work left x slowdown), in milliseconds: ceil(remaining x a / (b x scale)) in integers
            left = 0 if remaining <= 0 else -(-remaining * numerator // (denominator * job.scale))
            self.schedule.push(now + left, FINISH, (job, job.version))

    # the nodes and the autoscaler

    def node_ready(self, node: NodeState, now: int) -> None:
        node.ready = True
        self._maybe_idle(node, now)

    def warm(self, pool: PoolState, nodes: int, now: int) -> None:
        """A warm window starts (`nodes` > 0: that many placeholder pods) or ends (0): the placeholders beyond
        the count go, newest node first, and the nodes they held may be scaled down once empty."""
        pool.warm_target = nodes
        for node in reversed(pool.live):
            if pool.placed <= nodes:
                break
            if node.placeholder:
                node.placeholder = False
                pool.placed -= 1
                self._maybe_idle(node, now)

    def scale_down(self, node: NodeState, version: int, now: int) -> bool:
        """A node's scale-down is due: removed if still empty and nothing of its pool is Pending. False when it
        was void (the node was used or removed since) and changed nothing."""
        if node.version != version or node.removed is not None or node.used != 0 or node.placeholder:
            return False
        if node.pool.pending_count:  # a Pending pod is bound to it at this instant: look again after
            node.empty_since = None
            self.recheck.append(node)
        else:
            node.removed = now
            node.pool.live.remove(node)
        return True

    def autoscale(self, now: int) -> None:
        """New nodes for the Pending pods that booting nodes will not hold, as the autoscaler's template node
        counts them (jobs and placeholders, a placeholder alone on a node), up to max_nodes; then the nodes a
        scale-down left for later are looked at again."""
        for pool in self.pools.values():
            live = pool.live
            waiting = pool.warm_target - pool.placed  # the Pending placeholders (`pending_placeholders`)
            if (not pool.pending_count and waiting <= 0) or pool.in_stockout(now):
                continue
            template = pool.spec.template
            booting = sum(1 for n in live if not n.ready)
            uncovered = pool.pending_count + max(0, waiting) - booting * template
            wanted = max(math.ceil(uncovered / template), waiting - booting)
            if wanted <= 0:
                continue
            for _ in range(min(wanted, pool.spec.max_nodes - len(live))):
                node = self._add_node(pool, now, warm=False)
                self.schedule.push(node.ready_at, NODE_READY, node)
        for node in self.recheck:
            self._maybe_idle(node, now)
        self.recheck.clear()

    def _maybe_idle(self, node: NodeState, now: int) -> None:
        if node.warm or not node.ready or node.removed is not None or node.used or node.empty_since is not None:
            return
        if node.placeholder:  # a placeholder keeps it up: looked at again when it goes
            return
        node.empty_since = now
        node.version += 1
        pool = node.pool
        at = max(now + pool.unneeded, node.created + pool.delay_after_add)
        self.schedule.push(at, SCALE_DOWN, (node, node.version))

    def _add_node(self, pool: PoolState, now: int, *, warm: bool) -> NodeState:
        node = NodeState(
            pool,
            f"{pool.spec.name}-{len(pool.nodes) + 1}",
            now,
            now if warm else now + pool.draws.next_ms(_boot_ms),
            warm,
            [[] for _ in range(pool.spec.gpus_per_node)],
        )
        pool.nodes.append(node)
        pool.live.append(node)
        pool.peak_nodes = max(pool.peak_nodes, len(pool.live))
        return node

    def removals(self) -> list[int]:
        return [n.removed for p in self.pools.values() for n in p.nodes if n.removed is not None]
