"""The config reference is generated from the spec's models, and the committed copy is the generated text."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from support.fifo import fifo_with_a_reader

from infra.__main__ import main
from infra.cli.docs import REFERENCE
from infra.config.platform import PlatformSpec
from infra.config.pools import PoolSpec
from infra.render.config_reference import REGENERATE, config_reference, field_docstring


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    """Every model reachable from `model` through its fields' annotations."""
    seen.add(model)
    for field in model.model_fields.values():
        stack = [field.annotation]
        while stack:
            annotation = stack.pop()
            stack.extend(typing.get_args(annotation))
            if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
                _models(annotation, seen)
    return seen


def _rows(text: str) -> dict[str, list[str]]:
    """Key path -> the cells of its row in the `gpu-ci:platform` tables."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `") and line.count(" | ") == 4:
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells
    return rows


def test_committed_reference_is_the_generated_one() -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert committed == config_reference(), f"docs/config-reference.md is out of date: run `{REGENERATE}`"


def test_every_key_of_the_spec_has_a_description() -> None:
    """A field without a docstring would leave a blank in the reference: give each new field one line."""
    missing = [
        f"{model.__name__}.{name}"
        for model in _models(PlatformSpec, set())
        for name, field in model.model_fields.items()
        if not (field.description or field_docstring(model, name)).strip()
    ]
    assert missing == []


def test_rows_carry_type_default_constraints_and_docstring() -> None:
    rows = _rows(config_reference())
    assert rows["region"][1:4] == ["string", "`fr-par`", "one of `fr-par`, `nl-ams`, `pl-waw`"]
    assert rows["pools.<pool>.max_size"][1:3] == ["integer", "`1`"]
    assert rows["cluster.auto_upgrade.maintenance_window_start_hour"][3] == "≥ 0, ≤ 23"
    assert rows["workload.profiles.<profile>.gpu_utilization"][3] == "> 0, ≤ 1"
    assert rows["profiles.<profile>.families"][2:4] == ["**required**", "at least 1 item, at most 64 items"]
    assert rows["profiles.<profile>.cpu_request"][1] == "CPU quantity"
    assert rows["runner.job_timeout"][1:3] == ["duration", "`3h`"]
    assert rows["cluster.tags"][2] == "`[gpu-ci, managed-by-pulumi]`"
    assert rows["pools.<pool>.cold_start_minutes"][4] == " ".join(
        field_docstring(PoolSpec, "cold_start_minutes").split()
    )
    assert rows["pools.<pool>.cold_start_minutes"][4].startswith("Time from a pending job to a ready node")
    # a model used twice is documented once and referred to
    assert rows["node_types.<TYPE>.reserve"][1] == "object, the fields of `allocatable_reserve`"
    assert "node_types.<TYPE>.reserve.cpu" not in rows


def test_every_leaf_key_of_the_spec_is_in_the_reference() -> None:
    rows = _rows(config_reference())
    for key in ("cluster.autoscaler.expander", "ci.variables.<NAME>.secret", "runner.cache.bucket", "gitlab.project"):
        assert key in rows
    assert all(len(cells) == 5 for cells in rows.values())
    top = {key for key in rows if "." not in key}
    assert top == set(PlatformSpec.model_fields)


def test_docs_command_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reference.md"
    assert main(["docs", "--check", "--out", str(out)]) == 1  # missing
    assert REGENERATE in capsys.readouterr().err
    assert main(["docs", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == config_reference()
    assert main(["docs", "--check", "--out", str(out)]) == 0
    out.write_text(config_reference().replace("`fr-par`", "`nl-ams`", 1), encoding="utf-8")
    assert main(["docs", "--check", "--out", str(out)]) == 1


def test_docs_out_replaces_a_link_and_never_writes_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "README.md"
    target.write_text("# mine\n")
    out = tmp_path / "reference.md"
    out.symlink_to(target)
    assert main(["docs", "--out", str(out)]) == 0
    capsys.readouterr()
    assert target.read_text() == "# mine\n"
    assert not out.is_symlink() and out.read_text(encoding="utf-8") == config_reference()


def test_a_choice_of_objects_gets_a_section_per_variant() -> None:
    """`gpu_sharing` is one of three shapes, told apart by `strategy`: each has its own table."""
    text = config_reference()
    row = _rows(text)["pools.<pool>.gpu_sharing"]
    assert row[1] == "object, by `strategy`: `strategy: none`, `strategy: time-slicing`, `strategy: mps`"
    assert row[2] == "`{strategy: none}`"
    for variant in ("none", "time-slicing", "mps"):
        assert f"### `pools.<pool>.gpu_sharing` with `strategy: {variant}`" in text
    assert "| `pools.<pool>.gpu_sharing.strategy` | string | **required** | `mps` |" in text


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp, "{path}: is a directory, not a config reference"),
        (lambda tmp: Path("/dev/zero"), "/dev/zero: is not a regular file (a device, pipe or socket): not read"),
        (lambda tmp: _bytes(tmp / "reference.md", b"\xff\xfe"), "{path}:1: not UTF-8 text (byte 0xff)"),
        (lambda tmp: _bytes(tmp / "big.md", b" " * (4 << 20) + b"."), "{path}: larger than 4096 KiB"),
    ],
    ids=["directory", "dev-zero", "not-utf8", "too-large"],
)
def test_docs_check_reads_the_reference_within_a_budget(
    make: typing.Callable[[Path], Path], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each used to end in a traceback (/dev/zero in a MemoryError): one line, exit 2."""
    path = make(tmp_path)
    assert main(["docs", "--check", "--out", str(path)]) == 2
    assert capsys.readouterr().err.startswith("error: " + expected.format(path=path))


def test_docs_writes_a_regular_file_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory used to end in a traceback; a named pipe nobody reads, in a hang (refused before it is opened:
    the test holds a reader open, so that without the check it fails, not hangs)."""
    assert main(["docs", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: --out {tmp_path}: cannot be written (it is a directory)\n"
    pipe = tmp_path / "reference.md"
    with fifo_with_a_reader(pipe):
        assert main(["docs", "--out", str(pipe)]) == 2
    assert "reference.md: cannot be written (it is a device, pipe or socket, not a regular file)" in (
        capsys.readouterr().err
    )
    assert main(["docs", "--out", str(tmp_path / "out.md")]) == 0
    assert main(["docs", "--check", "--out", str(tmp_path / "out.md")]) == 0


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
