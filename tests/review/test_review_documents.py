"""Plan files and previews are data to validate: `plan-diff`, `mr-note` and `guard-replacements` read them
within a budget (`infra.documents`), check every field they use (`infra.review.schema`), and refuse a bad one
in one line naming the file and the field (exit 2). Each case is a probe that used to crash, hang or
mislead: a resource without a type, options of the wrong type, `warnings: "abc"` (three warnings), a huge
float, a preview without steps ("nothing replaced")."""

from __future__ import annotations

import copy
import io
import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fifo import fifo_with_a_reader

from infra.__main__ import main
from infra.cloud.names import T
from infra.review.schema import check_plan

POOL_URN = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-training"
PLAN: dict[str, Any] = {
    "project": "gpu-ci",
    "stack": "dev",
    "resources": [
        {
            "type": T.POOL,
            "name": "kapsule-ci-training",
            "urn": POOL_URN,
            "custom": True,
            "inputs": {"maxSize": 1, "nodeType": "L40S-1-48G"},
            "options": {"protect": True, "ignore_changes": ["size"], "delete_before_replace": True},
        }
    ],
    "outputs": {"cost": {"eur_per_day": 13.98, "makespan_minutes": 123.8, "failed_jobs": 0}},
    "capacity": [{"pool": "ci-training", "max_concurrent_jobs": 4}],
    "report": "Capacity (per node, while a pool is up):\n...\n",
    "warnings": ["platform.profiles.supervised.memory_limit='40Gi': overcommits"],
    "policy": [],
}


def _with(path: str, value: Any) -> dict[str, Any]:
    """PLAN with the value at `path` (`resources.0.options`) replaced, or deleted for `...`."""
    plan = copy.deepcopy(PLAN)
    *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
    node: Any = plan
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return plan


BAD_PLANS = [
    (_with("resources.0.type", ...), "resources[0].type: is missing"),
    (_with("resources.0.type", 5), "resources[0].type: must be a string, not a number"),
    (_with("resources.0.options", ["protect"]), "resources[0].options: must be an object, not a list"),
    (_with("resources.0.options.protect", "yes"), "resources[0].options.protect: must be true or false, not a string"),
    (
        _with("resources.0.options.ignore_changes", 5),
        "resources[0].options.ignore_changes: must be a list, not a number",
    ),
    (_with("resources.0.inputs", [1, 2]), "resources[0].inputs: must be an object, not a list"),
    (
        _with("resources.0.name", "x\nResources:\n    + 99 to create"),
        "resources[0].name: 'x\\nResources:\\n    + 99 to create' holds a control character ('\\n')",
    ),
    (
        _with("resources.0.urn", "kapsule-ci-training"),
        "resources[0].urn: 'kapsule-ci-training' is not a Pulumi URN (urn:pulumi:<stack>::<project>::<type>::<name>)",
    ),
    ({**PLAN, "resources": PLAN["resources"] * 2}, f"resources[1].urn: duplicate URNs ({POOL_URN[:60]!r}… is also "),
    (_with("report", 5), "report: must be a string, not a number"),
    (_with("report", "colour \x1b[31m"), "report: holds a control character ('\\x1b')"),
    (_with("warnings", "abc"), "warnings: must be a list, not a string"),
    (_with("warnings", ["ok", 5]), "warnings[1]: must be a list of strings, not a list holding a number"),
    (_with("outputs", [1]), "outputs: must be an object, not a list"),
    (_with("outputs.cost", "13 EUR"), "outputs.cost: must be an object, not a string"),
    (
        _with("outputs.cost.eur_per_day", 1e308),
        "outputs.cost.eur_per_day: 1e+308 is out of range (0 to 10000000)",
    ),
    (_with("outputs.cost.makespan_minutes", -1), "outputs.cost.makespan_minutes: -1 is out of range (0 to 10000000)"),
    (_with("outputs.cost.failed_jobs", "none"), "outputs.cost.failed_jobs: must be a number or null, not a string"),
    (_with("capacity.0.max_concurrent_jobs", 2.5), "capacity[0].max_concurrent_jobs: 2.5 is not a whole number"),
    (_with("capacity.0.max_concurrent_jobs", True), "capacity[0].max_concurrent_jobs: must be a number or null"),
    (_with("capacity.0.pool", "@all"), "capacity[0].pool: '@all' is not a pool name (1-63 of a-z, 0-9 and '-')"),
    (_with("capacity", {"pool": "x"}), "capacity: must be a list, not an object"),
    (_with("stack", "dev -->"), "stack: 'dev -->' is not a stack name (letters, digits, '-', '_', '.')"),
    (_with("resources", ...), "not a plan document (python -m infra plan --json): no 'resources' list"),
]

BAD_TEXTS = [
    ('{"resources": []', "not JSON (line 1: Expecting ',' delimiter)"),
    ("Capacity (per node...", "not JSON (line 1: Expecting value)"),
    ('{"resources": [], "x": ' + "[" * 150 + "]" * 150 + "}", "nested more than 100 levels deep, not a plan file"),
    ('{"resources": [], "x": NaN}', "NaN is not a finite number"),
    ('{"resources": [], "x": 1e999}', "1e999 is not a finite number"),
    ('{"resources": [], "x": ' + "9" * 5000 + "}", "not readable JSON: Exceeds the limit (4300 digits)"),
]


def _write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err[len("error: ") : -1]


def test_the_real_plan_passes_the_schema(dev_plan_document: dict[str, Any]) -> None:
    plan = check_plan(dev_plan_document, "plan.json")
    assert plan.stack == "dev" and len(plan.resources) == len(dev_plan_document["resources"])
    assert plan.outputs.cost is not None and plan.outputs.cost.failed_jobs == 0
    check_plan(PLAN, "plan.json")


@pytest.mark.parametrize(("plan", "expected"), BAD_PLANS, ids=[expected[:40] for _, expected in BAD_PLANS])
def test_plan_diff_names_the_file_and_the_field(
    plan: dict[str, Any], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = _write(tmp_path, "base.json", PLAN), _write(tmp_path, "head.json", plan)
    assert main(["plan-diff", str(good), str(bad)]) == 2
    assert _one_error(capsys).startswith(f"{bad}: {expected}")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("content", "expected"), BAD_TEXTS, ids=[expected[:30] for _, expected in BAD_TEXTS])
def test_a_file_that_is_no_plan_is_one_line(
    content: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = _write(tmp_path, "base.json", PLAN), _write(tmp_path, "head.json", content)
    assert main(["plan-diff", str(bad), str(good)]) == 2
    assert _one_error(capsys).startswith(f"{bad}: {expected}")


def _socket(path: Path) -> None:
    """A bound Unix socket at `path` (closed again: the file stays, as a socket)."""
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "is a directory, not a plan file"),
        (lambda p: p.write_bytes(b'{"resources": [], "x": "\xff"}'), "head.json:1: not UTF-8 text (byte 0xff)"),
        (lambda p: p.write_bytes(b" " * (16 << 20) + b"{}"), "larger than 16384 KiB, not a plan file"),
        (lambda p: p.symlink_to("/dev/zero"), "is not a regular file (a device, pipe or socket): not read"),
        (lambda p: p.symlink_to("/proc/self/status"), "its size says other than what it holds (a /proc or /sys entry"),
        (_socket, "is not a regular file (a device, pipe or socket): not read"),
    ],
    ids=["directory", "not-utf8", "too-large", "device", "proc-entry", "socket"],
)
def test_a_file_that_cannot_be_read_is_one_line(
    make: Callable[[Path], Any], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = _write(tmp_path, "base.json", PLAN), tmp_path / "head.json"
    make(bad)
    assert main(["plan-diff", str(good), str(bad)]) == 2
    assert expected in _one_error(capsys)


@pytest.mark.parametrize("source", ["/proc/self/environ", "/proc/self/cmdline", "/proc/version"])
def test_mr_note_reads_no_proc_or_sys_entry_and_shows_no_environment_credential(
    source: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCW_SECRET_KEY", "9b2f6c1e-0d4a-4e8b-b7c3-5a6d7e8f9a0b")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "q8Zr+4vHkLmN0pQ2sT5uW7xY9aB1cD3eF6gH8iJ0")
    assert main(["mr-note", "--plan-diff", source, "--dry-run", "--stack", "dev"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "9b2f6c1e" not in captured.err and "q8Zr" not in captured.err
    [line] = captured.err.splitlines()
    assert line == f"error: {source}: is not a regular file: its size says other than what it holds (a /proc or " + (
        "/sys entry, made as it is read, or a file being written): not read"
    )


def test_mr_note_refuses_a_named_pipe_without_waiting_on_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_with_a_reader(tmp_path / "diff.fifo") as fifo:
        assert main(["mr-note", "--plan-diff", str(fifo), "--dry-run", "--stack", "dev"]) == 2
    assert "is not a regular file (a device, pipe or socket): not read" in _one_error(capsys)


# ---------------------------------------------------------------------------------------------------------
# mr-note: a bad head plan is refused; a bad base plan is said in the note (the base may not build)


def _mr_note(tmp_path: Path, *args: str) -> list[str]:
    diff = _write(tmp_path, "plan-diff.txt", "Resources:\n    ~ 1 to update\n    3 unchanged\n")
    return ["mr-note", "--plan-diff", str(diff), "--dry-run", "--stack", "dev", *args]


@pytest.mark.parametrize(("plan", "expected"), BAD_PLANS[:6] + BAD_PLANS[9:16], ids=lambda case: str(case)[:30])
def test_mr_note_refuses_a_bad_head_plan_in_one_line(
    plan: dict[str, Any], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _write(tmp_path, "plan-head.json", plan)
    assert main(_mr_note(tmp_path, "--plan", str(head))) == 2
    assert _one_error(capsys).startswith(f"{head}: {expected}")


def test_warnings_that_are_a_string_are_refused_not_split_into_letters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _write(tmp_path, "plan-head.json", _with("warnings", "abc"))
    assert main(_mr_note(tmp_path, "--plan", str(head))) == 2
    assert "- a\n- b\n- c" not in capsys.readouterr().out


def test_a_bad_base_plan_is_said_in_the_note_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = _write(tmp_path, "plan-head.json", PLAN)
    base = _write(tmp_path, "plan-base.json", _with("stack", "@all </details> #1"))
    assert main(_mr_note(tmp_path, "--plan", str(head), "--base-plan", str(base))) == 0
    note = capsys.readouterr().out
    assert (
        f"- no base plan ({base}: stack: '\\@all \\</details\\> \\#1' is not a stack name (letters, digits, '-', "
        "'\\_', '.')); this commit: 13.98 EUR/day"
    ) in note
    assert "@all <" not in note and "</details> #" not in note


@pytest.mark.parametrize(
    "case",
    [
        (["--stack", "dev --> @all"], {}, "--stack 'dev --> @all': not a stack name"),
        ([], {"PULUMI_STACK": "dev\n# heading"}, "$PULUMI_STACK 'dev\\n# heading': not a stack name"),
        (["--head-sha", "`@all`"], {}, "--head-sha '`@all`': not a commit SHA (7 to 64 hexadecimal digits)"),
        ([], {"CI_COMMIT_SHA": "HEAD"}, "$CI_COMMIT_SHA 'HEAD': not a commit SHA"),
    ],
    ids=["stack-flag", "stack-variable", "sha-flag", "sha-variable"],
)
def test_mr_note_refuses_a_stack_or_commit_it_cannot_name(
    case: tuple[list[str], dict[str, str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args, env, expected = case
    for name in ("PULUMI_STACK", "CI_COMMIT_SHA", "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    command = [arg for arg in _mr_note(tmp_path) if arg not in ("--stack", "dev")] + args
    assert main(command) == 2
    assert _one_error(capsys).startswith(expected)


def test_mr_note_reads_the_diff_within_a_budget_and_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Resources:\n    + 2 to create\n")))
    assert main(["mr-note", "--preview", "-", "--dry-run", "--stack", "dev"]) == 0
    assert "**`pulumi preview`**: 2 to create." in capsys.readouterr().out
    huge = _write(tmp_path, "preview.txt", b"x" * ((16 << 20) + 1))
    assert main(["mr-note", "--preview", str(huge), "--dry-run"]) == 2
    assert _one_error(capsys) == f"{huge}: larger than 16384 KiB, not a preview or plan diff"
    assert main(["mr-note", "--preview", str(tmp_path), "--dry-run"]) == 2
    assert _one_error(capsys) == f"{tmp_path}: is a directory, not a preview or plan diff"


def test_a_count_of_thousands_of_digits_is_no_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It used to end in a traceback (int() refuses 4,300 digits); it is not "no changes" either."""
    preview = _write(tmp_path, "preview.txt", "Resources:\n    + " + "9" * 5000 + " to create\n")
    assert main(["mr-note", "--preview", str(preview), "--dry-run", "--stack", "dev"]) == 0
    assert "**`pulumi preview`**: no `Resources:` summary could be read; its output is below." in (
        capsys.readouterr().out
    )


def test_max_lines_must_show_something(capsys: pytest.CaptureFixture[str]) -> None:
    for flag, value in [("--max-lines", v) for v in ("0", "-5", "many", "9" * 5000)] + [
        ("--mr", v)
        for v in ("-1", "0", "9" * 20, "٣")  # a negative or 20-digit IID used to be sent to GitLab
    ]:
        with pytest.raises(SystemExit) as stopped:
            main(["mr-note", "--preview", "x", "--dry-run", flag, value])
        assert stopped.value.code == 2
        err = capsys.readouterr().err.splitlines()[-1]
        assert f"argument {flag}: " in err and "is not a whole number from 1 to" in err and len(err) < 200, err


# ---------------------------------------------------------------------------------------------------------
# guard-replacements: a preview it cannot read is not judged; a guarded step is found whatever it claims

STEP = {"op": "replace", "urn": POOL_URN, "newState": {"type": T.POOL}, "replaceReasons": ["nodeType"]}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({}, "no steps (a preview lists every resource, the stack itself at least): not a plan to judge"),
        ({"steps": []}, "no steps ("),
        ({"steps": None, "diagnostics": []}, "no steps ("),
        ({"steps": {"0": STEP}}, "steps: must be a list, not an object"),
        ({"steps": [{**STEP, "op": None}]}, "steps[0].op: null is not a step op of pulumi (same, "),
        ({"steps": [{k: v for k, v in STEP.items() if k != "op"}]}, "steps[0].op: is missing"),
        ({"steps": [{**STEP, "op": "obliterate"}]}, "steps[0].op: 'obliterate' is not a step op of pulumi (same, "),
        ({"steps": [{**STEP, "urn": 5}]}, "steps[0].urn: must be a string, not a number"),
        ({"steps": [{**STEP, "replaceReasons": "nodeType"}]}, "steps[0].replaceReasons: must be a list, not a string"),
        ({"steps": [{**STEP, "newState": {"type": ["x"]}}]}, "steps[0].newState.type: must be a string, not a list"),
        ([STEP], "must be an object, not a list"),
    ],
    ids=[
        *("empty", "no-steps", "null-steps", "steps-object", "op-null", "no-op", "unknown-op", "urn", "reasons"),
        *("state-type", "a-list"),
    ],
)
def test_the_guard_refuses_to_judge_what_it_cannot_read(
    document: Any, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preview = _write(tmp_path, "preview.json", document)
    assert main(["guard-replacements", str(preview)]) == 2
    assert _one_error(capsys).startswith(f"{preview}: {expected}")
    assert capsys.readouterr().out == ""


def test_a_guarded_urn_is_guarded_whatever_type_its_state_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPU_CI_ALLOW_REPLACE", raising=False)
    disguised = {**STEP, "op": "delete", "oldState": {"type": "random:index/randomId:RandomId"}, "newState": None}
    preview = _write(tmp_path, "preview.json", {"steps": [disguised]})
    assert main(["guard-replacements", str(preview)]) == 1
    assert "error: the plan deletes Kapsule pool 'kapsule-ci-training'" in capsys.readouterr().err


def test_the_guard_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    document = json.dumps({"steps": [{"op": "same", "urn": POOL_URN}]}).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(document)))
    assert main(["guard-replacements", "-"]) == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Previewing update (dev):")))
    assert main(["guard-replacements", "-"]) == 2
    assert _one_error(capsys) == "stdin: not JSON (line 1: Expecting value)"


# ---------------------------------------------------------------------------------------------------------
# No token a plan, a preview or a flag carries reaches the note, the diff or the guard's lines

TOKEN = "glpat-" + "Z9y8X7w6V5u4T3s2R1q0"
USERINFO = "https://oauth2:hunter2hunter2@gitlab.example.com/group/project"


def _burst_job_named(name: str) -> dict[str, Any]:
    plan = copy.deepcopy(PLAN)
    plan["outputs"]["cost"]["burst"] = {
        "pipeline": name,
        "clock": "Mon 09:00",
        "start_minute": 0,
        "minutes": 30,
        "omitted": 0,
        "cold_starts": [],
        "warm": [],
        "jobs": [
            {
                "name": name,
                "pool": "ci-training",
                "class": "merge_request",
                "attempt": 1,
                "queued": 0,
                "taken": 0,
                "started": 1,
                "finished": 30,
                "outcome": "success",
                "own": True,
            }
        ],
    }
    return plan


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: ["--plan", str(_write(tmp, "head.json", _with("warnings", [TOKEN, USERINFO])))],
        lambda tmp: ["--plan", str(_write(tmp, "head.json", _with("report", f"token {TOKEN}\nurl {USERINFO}\n")))],
        lambda tmp: ["--plan", str(_write(tmp, "head.json", _burst_job_named(f"train-{TOKEN}")))],
        lambda tmp: ["--plan", str(_write(tmp, "head.json", PLAN)), "--base-plan", str(tmp / f"{TOKEN}.json")],
        lambda tmp: ["--job-url", USERINFO],
        lambda tmp: ["--job-url", f"https://gitlab.example.com/jobs/1?private_token={TOKEN}"],
    ],
    ids=["warnings", "report", "burst-job-name", "base-plan-name", "job-url-userinfo", "job-url-token"],
)
def test_the_note_carries_no_token_whatever_the_plan_holds(
    make: Callable[[Path], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_mr_note(tmp_path), *make(tmp_path)]) == 0
    note = capsys.readouterr().out
    assert "redacted" in note
    assert TOKEN[6:14] not in note and "hunter2" not in note


def test_the_preview_text_is_quoted_without_its_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preview = _write(tmp_path, "preview.txt", f"Resources:\n    + 1 to create\n  + token: {TOKEN}\n  url: {USERINFO}\n")
    assert main(["mr-note", "--preview", str(preview), "--dry-run", "--stack", "dev"]) == 0
    note = capsys.readouterr().out
    assert "+ token: <redacted>" in note and "hunter2" not in note and TOKEN[6:14] not in note


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--stack", TOKEN], "--stack: the stack name looks like a GitLab token, not a stack name"),
        (["--plan", "{head}"], "--plan {head}: stack: the stack name looks like a GitLab token, not a stack name"),
    ],
    ids=["flag", "plan"],
)
def test_a_stack_name_that_is_a_token_is_refused_it_would_sit_in_the_hidden_marker(
    args: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _write(tmp_path, "head.json", _with("stack", TOKEN))
    command = [arg for arg in _mr_note(tmp_path) if arg not in ("--stack", "dev")]
    assert main([*command, *(arg.format(head=head) for arg in args)]) == 2
    assert _one_error(capsys) == expected.format(head=head)


def test_plan_diff_prints_no_token_a_plan_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = _with("stack", TOKEN)
    head["resources"][0]["inputs"]["token"] = TOKEN
    head["resources"][0]["inputs"]["url"] = USERINFO
    assert main(["plan-diff", str(_write(tmp_path, "base.json", PLAN)), str(_write(tmp_path, "head.json", head))]) == 0
    out = capsys.readouterr().out
    assert "Offline plan diff of stack '<redacted>'" in out and '+    token: "<redacted>"' in out
    assert TOKEN[6:14] not in out and "hunter2" not in out


def test_the_guard_names_a_resource_without_the_token_its_urn_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPU_CI_ALLOW_REPLACE", raising=False)
    step = {**STEP, "urn": POOL_URN.replace("kapsule-ci-training", TOKEN)}
    assert main(["guard-replacements", str(_write(tmp_path, "preview.json", {"steps": [step]}))]) == 1
    err = capsys.readouterr().err
    assert "error: the plan replaces Kapsule pool '<redacted>'" in err and TOKEN[6:14] not in err


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("plan\nerror: all good.json", "plan\\nerror: all good.json"),
        ("\x1b[2J\x1b]0;owned\x07plan.json", "\\x1b[2J\\x1b]0;owned\\x07plan.json"),
        ("p" * 5000 + ".json", "p" * 300 + "…: cannot be read (File name too long)"),
    ],
    ids=["newline", "terminal-escapes", "5000-characters"],
)
def test_a_file_name_cannot_forge_or_garble_the_error_line(
    name: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plan-diff", name, name]) == 2
    line = _one_error(capsys)
    assert line.startswith(shown) and "\x1b" not in line
