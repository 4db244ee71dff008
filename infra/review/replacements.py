"""The replacement guard: which steps of a `pulumi preview --json` would replace or delete something that
loses running work, read before `pulumi up` applies them.

Guarded, because Pulumi deletes them (first, with `deleteBeforeReplace`) and their work goes with them:
- a Kapsule pool: its nodes and the jobs running on them; on `system`, the only runner manager;
- a Kubernetes namespace: every pod in it, i.e. the runner manager and jobs still draining;
- a GitLab runner registration: its token dies, and the manager holding it stops taking and finishing jobs;
- the Kapsule cluster: everything.
Protection (`protect`) already stops a protected one; this guard also catches the unprotected ones and
says which field forces the replacement, so `up` fails before it starts rather than halfway.

Pure: the preview document in, findings out. The document is what `pulumi preview --json` prints, an
`apitype`-shaped digest: `steps[]` with `op`, `urn`, `oldState`/`newState` (`type`, `inputs`) and
`replaceReasons`, checked field by field first (`infra.review.schema.check_preview`). The guard fails
closed: a document without steps, a step without an `op` or with an op the engine does not print, is not
judged at all; a step is guarded when any of its types (old state, new state, URN) is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from infra.cloud.names import T
from infra.review.schema import PreviewDocument, PreviewDocumentError, PreviewStep, check_preview

__all__ = [  # PreviewDocumentError too: what find_destructive raises
    "ALLOW_VARIABLE",
    "DESTRUCTIVE_OPS",
    "GUARDED_TYPES",
    "Finding",
    "PreviewDocumentError",
    "allowed",
    "find_destructive",
]

ALLOW_VARIABLE: Final = "GPU_CI_ALLOW_REPLACE"
"""`GPU_CI_ALLOW_REPLACE=1` on the `up` job lets a reviewed replacement through (it is still listed)."""

GUARDED_TYPES: Final = {
    T.POOL: "Kapsule pool",
    "scaleway:index/kubernetesNodePool:KubernetesNodePool": "Kapsule pool",
    T.CLUSTER: "Kapsule cluster",
    "scaleway:index/kubernetesCluster:KubernetesCluster": "Kapsule cluster",
    T.NAMESPACE: "Kubernetes namespace",
    T.USER_RUNNER: "GitLab runner registration",
    "gitlab:index/runner:Runner": "GitLab runner registration",
}
"""Resource types whose replacement or deletion loses running jobs, and how to call them."""

DESTRUCTIVE_OPS: Final = {
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "discard-replaced": "replace",
    "read-replacement": "replace",
    "import-replacement": "replace",
    "delete": "delete",
    "discard": "delete",
}
"""`pulumi preview --json` step ops (the engine's StepOp) that delete the existing resource."""


@dataclass(frozen=True)
class Finding:
    """A guarded resource that the plan replaces or deletes."""

    action: str
    """`replace` or `delete`."""
    kind: str
    urn: str
    reasons: tuple[str, ...] = ()
    """The inputs that force the replacement (`replaceReasons`), when the engine says."""

    @property
    def name(self) -> str:
        return self.urn.split("::", 3)[-1]

    def describe(self) -> str:
        why = f" (because of {', '.join(self.reasons)})" if self.reasons else ""
        return f"{self.action}s {self.kind} '{self.name}'{why} [{self.urn}]"


def find_destructive(document: PreviewDocument | Any) -> list[Finding]:
    """Guarded resources the preview replaces or deletes, one finding per resource, in URN order.

    `document`: a checked PreviewDocument, or the JSON document itself (checked here; PreviewDocumentError)."""
    if not isinstance(document, PreviewDocument):
        document = check_preview(document, "not a `pulumi preview --json` document")
    found: dict[str, Finding] = {}
    for step in document.steps:
        action = DESTRUCTIVE_OPS.get(step.op)
        kind = next((GUARDED_TYPES[t] for t in _types(step) if t in GUARDED_TYPES), None)
        if action is None or kind is None:
            continue
        urn = step.urn
        reasons = tuple(step.replace_reasons or ())
        earlier = found.get(urn)
        if earlier is not None:  # replace + create-replacement + delete-replaced of one resource: one finding
            reasons = tuple(dict.fromkeys((*earlier.reasons, *reasons)))
            action = "replace" if "replace" in (earlier.action, action) else action
        found[urn] = Finding(action, kind, urn, reasons)
    return [found[urn] for urn in sorted(found)]


def _types(step: PreviewStep) -> list[str]:
    """The step's resource types: its states' and its URN's (`<stack>::<project>::<parent$type>::<name>`)."""
    states = [state.type for state in (step.new_state, step.old_state) if state is not None and state.type]
    return [*states, step.urn.split("::", 3)[2].rsplit("$", 1)[-1]]


def allowed(value: str | None) -> bool:
    """Whether GPU_CI_ALLOW_REPLACE lets replacements through: `1`, `true` or `yes`, nothing else."""
    return (value or "").strip().lower() in {"1", "true", "yes"}
