"""The two JSON documents the review commands read, as data to validate (pure): a plan (`python -m infra plan
--json`: `plan-diff`, `mr-note`) and a preview (`pulumi preview --json`: `guard-replacements`).

Every field a command reads is checked here, once: its type, its range, and for a name or a URN that it is
one line of printable text. A document that does not fit is refused in one line naming the field and what is
wrong with it (`resources[3].type: is missing`, `warnings: must be a list of strings, not a string`,
`outputs.cost.eur_per_day: 1e+308 is out of range (0 to 10000000)`), never half-read. Fields no command reads
are let through, so a plan written by an older or newer version of the program is still a plan; resource
inputs and stack outputs are any JSON (their size, depth and numbers are bounded by `infra.documents`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, ValidationError

from infra.documents import DocumentError
from infra.untrusted import first_hidden, quoted

MAX_NAME: Final = 1024
"""Characters of a resource type, name or URN (Pulumi's are far shorter; a longer one is not a plan's)."""
MAX_EUR_PER_DAY: Final = 10_000_000
MAX_MINUTES: Final = 10_000_000
"""About 19 years: a makespan beyond it is not a simulated day's."""
MAX_COUNT: Final = 10_000_000
"""Jobs or job slots."""
MAX_BURST_ROWS: Final = 200
"""Job attempts, cold starts or warm windows of the busiest burst's timeline (the program writes at most 40)."""
STACK_NAME: Final = re.compile(r"\A[A-Za-z0-9_.-]{1,100}(?:/[A-Za-z0-9_.-]{1,100}){0,2}\Z")
"""A Pulumi stack name (letters, digits, `-`, `_`, `.`), or `org/project/stack`."""
POOL_NAME: Final = re.compile(r"\A[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\Z")
"""A pool name as the spec allows it: a DNS label."""

STEP_OPS: Final = (
    "same",
    "create",
    "update",
    "delete",
    "replace",
    "create-replacement",
    "delete-replaced",
    "read",
    "read-replacement",
    "refresh",
    "discard",
    "discard-replaced",
    "remove-pending-replace",
    "import",
    "import-replacement",
    "diff",
)
"""Every step op the engine prints (pulumi's `deploy.StepOps`): an unknown one is refused, not guessed at."""


class PlanDocumentError(DocumentError):
    """The file is not a plan document written by `python -m infra plan --json`."""


class PreviewDocumentError(DocumentError):
    """The file is not what `pulumi preview --json` prints."""


# ---------------------------------------------------------------------------------------------------------
# Field types: each says in its message what it expected


def _one_line(value: str) -> str:
    if not value:
        raise ValueError("is empty")
    if len(value) > MAX_NAME:
        raise ValueError(f"is {len(value)} characters long (at most {MAX_NAME})")
    if (bad := first_hidden(value)) is not None:
        raise ValueError(f"{_quote(value)} holds a control character ({bad!r})")
    return value


def _text(value: str) -> str:
    """Multi-line text (the report, a warning): any printable character, line breaks and tabs."""
    if (bad := first_hidden(value, allowed="\n\t")) is not None:
        raise ValueError(f"holds a control character ({bad!r})")
    return value


def _urn(value: str) -> str:
    parts = value.split("::", 3)
    if not value.startswith("urn:pulumi:") or len(parts) < 4 or not parts[2] or not parts[3]:
        raise ValueError(f"{_quote(value)} is not a Pulumi URN (urn:pulumi:<stack>::<project>::<type>::<name>)")
    return value


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{_quote(value)} is not {what}")
        return value

    return check


def _number(top: float, *, whole: bool) -> Callable[[object], float | None]:
    """A figure of the cost delta: a number from 0 to `top` (a whole one if `whole`), or null (`n/a`)."""

    def check(value: object) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number or null, not {_kind(value)}")
        if not (0 <= value <= top and (isinstance(value, int) or math.isfinite(value))):  # no float() of 10**4000
            raise ValueError(f"{_clip(repr(value), 40)} is out of range (0 to {top})")
        if whole and isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{value!r} is not a whole number")
        return float(value)

    return check


def _step_op(value: object) -> str:
    if not isinstance(value, str) or value not in STEP_OPS:
        shown = _quote(value) if isinstance(value, str) else _kind(value)
        raise ValueError(f"{shown} is not a step op of pulumi ({', '.join(STEP_OPS)})")
    return value


OneLine = Annotated[str, AfterValidator(_one_line)]
Text = Annotated[str, AfterValidator(_text)]
Urn = Annotated[str, AfterValidator(_one_line), AfterValidator(_urn)]
StackName = Annotated[str, AfterValidator(_matching(STACK_NAME, "a stack name (letters, digits, '-', '_', '.')"))]
PoolName = Annotated[str, AfterValidator(_matching(POOL_NAME, "a pool name (1-63 of a-z, 0-9 and '-')"))]
Euros = Annotated[float | None, PlainValidator(_number(MAX_EUR_PER_DAY, whole=False))]
Minutes = Annotated[float | None, PlainValidator(_number(MAX_MINUTES, whole=False))]
Count = Annotated[float | None, PlainValidator(_number(MAX_COUNT, whole=True))]


def _present(value: float | None) -> float | None:
    if value is None:
        raise ValueError("must be a number, not null")
    return value


Time = Annotated[float | None, PlainValidator(_number(MAX_MINUTES, whole=False)), AfterValidator(_present)]
"""Minutes that must be there (a timeline's queueing, end)."""


class _Document(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


# ---------------------------------------------------------------------------------------------------------
# A plan (`infra.cli.plan.plan_document`)


class ResourceOptions(_Document):
    protect: bool = False
    ignore_changes: list[str] = Field(default_factory=list)
    delete_before_replace: bool = False
    import_id: str = ""
    read: bool = False
    id: str | None = None
    provider: str = ""
    additional_secret_outputs: list[str] = Field(default_factory=list)
    dependencies: list[str] = Field(default_factory=list)


class PlanResource(_Document):
    type: OneLine
    name: OneLine
    urn: Urn
    custom: bool = True
    inputs: dict[str, Any] = Field(default_factory=dict)
    options: ResourceOptions = Field(default_factory=ResourceOptions)


class CapacityRow(_Document):
    pool: PoolName
    max_concurrent_jobs: Count = None


class CostTarget(_Document):
    """`outputs.cost.slo`: the target the week is judged on."""

    merge_request_wait_minutes: Minutes = None


class BurstJobFigure(_Document):
    """One job attempt of the busiest burst's timeline (`infra.sim.burst`): minutes from the burst's queueing."""

    name: OneLine
    pool: PoolName
    job_class: Literal["merge_request", "batch"] = Field(alias="class")
    own: bool = False
    attempt: Count = 0
    queued: Time
    taken: Minutes = None
    started: Minutes = None
    finished: Time
    outcome: Literal["success", "failed"]


class ColdStartFigure(_Document):
    pool: PoolName
    node: OneLine
    boot: Time
    ready: Time


class WarmFigure(_Document):
    pool: PoolName
    start: Time
    end: Time
    nodes: Count


class BurstFigures(_Document):
    """`outputs.cost.burst`: the week's busiest burst, drawn in the MR note (bounded: the note stays readable)."""

    pipeline: OneLine
    start_minute: Time
    clock: OneLine
    minutes: Time
    omitted: Count = 0
    jobs: list[BurstJobFigure] = Field(max_length=MAX_BURST_ROWS)
    cold_starts: list[ColdStartFigure] = Field(default_factory=list, max_length=MAX_BURST_ROWS)
    warm: list[WarmFigure] = Field(default_factory=list, max_length=MAX_BURST_ROWS)


class CostFigures(_Document):
    """`outputs.cost`: the simulated week. A key may be absent (a plan from before the simulation, or the week)."""

    eur_per_day: Euros = None
    makespan_minutes: Minutes = None
    failed_jobs: Count = None
    merge_request_wait_p95_minutes: Minutes = None
    slo: CostTarget | None = None
    burst: BurstFigures | None = None


class PlanOutputs(_Document):
    cost: CostFigures | None = None
    capacity: list[CapacityRow] | None = None


class BoundFigures(_Document):
    """`weeks.bound`: the least a week meeting the target can cost (`infra.sim.target_cost`), and the spec against
    it; absent from a plan before it."""

    eur_per_week_median: Euros = None
    ratio: Annotated[float | None, PlainValidator(_number(MAX_COUNT, whole=False))] = None


class BlindBoundFigures(_Document):
    """`weeks.blind_bound`: the least a platform that cannot see merge requests coming spends on an average week
    (`infra.sim.blind_bound`), and the spec against it; absent from a plan before it."""

    eur_per_week: Euros = None
    ratio: Annotated[float | None, PlainValidator(_number(MAX_COUNT, whole=False))] = None


class WeeksFigures(_Document):
    """`weeks`: the target over the simulated weeks (`infra.sim.weeks`); absent from a plan before them."""

    weeks: Count = None
    met_weeks: Count = None
    required_weeks: Count = None
    met: bool | None = None
    merge_request_wait_p95_minutes: Minutes = None
    """The p95 over all the weeks' merge-request jobs."""
    bound: BoundFigures | None = None
    blind_bound: BlindBoundFigures | None = None


class PlanDocument(_Document):
    stack: StackName | None = None
    resources: list[PlanResource]
    outputs: PlanOutputs = Field(default_factory=PlanOutputs)
    capacity: list[CapacityRow] | None = None
    report: Text | None = None
    weeks: WeeksFigures | None = None
    warnings: list[Text] = Field(default_factory=list)


def check_plan(document: Any, what: str) -> PlanDocument:
    """The plan `document` (from the file `what`), validated; PlanDocumentError naming the field otherwise."""
    if not isinstance(document, Mapping) or not isinstance(document.get("resources"), list):
        raise PlanDocumentError(f"{what}: not a plan document (python -m infra plan --json): no 'resources' list")
    try:
        plan = PlanDocument.model_validate(document)
    except ValidationError as err:
        raise PlanDocumentError(f"{what}: {problem(err)}") from None
    first: dict[str, int] = {}
    for index, resource in enumerate(plan.resources):
        if (earlier := first.setdefault(resource.urn, index)) != index:
            raise PlanDocumentError(
                f"{what}: resources[{index}].urn: duplicate URNs ({_quote(resource.urn)} is also resources[{earlier}])"
            )
    return plan


# ---------------------------------------------------------------------------------------------------------
# A preview (`pulumi preview --json`: the engine's apitype.PreviewDigest)


class StepState(_Document):
    type: OneLine | None = None


class PreviewStep(_Document):
    op: Annotated[str, PlainValidator(_step_op)]
    urn: Urn
    old_state: StepState | None = Field(None, alias="oldState")
    new_state: StepState | None = Field(None, alias="newState")
    replace_reasons: list[OneLine] | None = Field(None, alias="replaceReasons")


class PreviewDocument(_Document):
    steps: list[PreviewStep]


def check_preview(document: Any, what: str) -> PreviewDocument:
    """The preview `document` (from `what`), validated; PreviewDocumentError naming the field otherwise. A
    preview without steps is refused: every preview lists the stack itself, so none is no preview at all."""
    if isinstance(document, Mapping) and document.get("steps") in (None, []):
        raise PreviewDocumentError(
            f"{what}: no steps (a preview lists every resource, the stack itself at least): not a plan to judge"
        )
    try:
        return PreviewDocument.model_validate(document)
    except ValidationError as err:
        raise PreviewDocumentError(f"{what}: {problem(err)}") from None


# ---------------------------------------------------------------------------------------------------------
# One line for a validation error

_EXPECTED: Final = {
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "int_type": "must be a whole number",
    "float_type": "must be a number",
}


def problem(err: ValidationError) -> str:
    """`<field>: <what is wrong>` for the first problem pydantic found, and how many others there are."""
    errors = err.errors(include_url=False)
    first = errors[0]
    where = field_path(first["loc"])
    if first["type"] == "missing":
        what = "is missing"
    elif first["type"] in _EXPECTED:
        expected = _EXPECTED[first["type"]]
        if first["type"] == "string_type" and len(first["loc"]) >= 2 and isinstance(first["loc"][-1], int):
            expected = "must be a list of strings"
            what = f"{expected}, not a list holding {_kind(first['input'])}"
        else:
            what = f"{expected}, not {_kind(first['input'])}"
    elif first["type"] == "value_error":
        what = str(first["ctx"]["error"])
    else:
        what = first["msg"]
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"{where}: {what}{more}" if where else f"{what}{more}"


def field_path(loc: tuple[int | str, ...]) -> str:
    """`resources[3].options.protect`, `outputs["a key"]`: where a value sits, as the messages name it."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            path += f".{part}" if path else part
        else:
            path += f"[{_quote(part)}]"
    return path


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _quote(value: str, limit: int = 60) -> str:
    """`value` quoted for a message: control characters escaped, cut to `limit` characters."""
    return quoted(value, limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
