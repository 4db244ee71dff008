"""The one stack-file editor (`infra.offline.stack_edit`): a section written in place reads back as the section
asked for, and every line outside what changed stays byte for byte (`recommend --write`'s `set_keys` is tested
through the command, tests/sim/test_recommend.py; `workload --write` in tests/workload/test_workload_gitlab.py)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from infra.offline.stack_edit import EditError, section_text, set_keys, write_section
from infra.offline.stack_yaml import read_apart

DEV = (ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
STACK = """\
# top
config:
  gpu-ci:platform:
    pools:
      ci-compile: {max_size: 1}
    workload:
      time_zone: Europe/Paris  # where the hours are told
      # the profiles
      profiles:
        rl:
          kinds:
            train: {class: batch, jobs_per_day: 2,
                    days: Mon-Fri}
            old:
              class: batch  # goes
            # introduces what follows old
          gpu_utilization: 0.5
  # the next key
  gpu-ci:other: 1
"""


def _platform(text: str) -> dict[str, Any]:
    return yaml.safe_load(text)["config"]["gpu-ci:platform"]


def test_a_section_is_edited_in_place_and_only_where_it_changes() -> None:
    wanted = {
        "time_zone": "Europe/Paris",
        "profiles": {"rl": {"kinds": {"train": {"class": "batch", "jobs_per_day": 3}}, "gpu_utilization": 0.5}},
    }
    after = write_section(STACK, "s.yaml", "gpu-ci", "workload", wanted)
    assert _platform(after)["workload"] == wanted
    assert after.splitlines() == [
        "# top",
        "config:",
        "  gpu-ci:platform:",
        "    pools:",
        "      ci-compile: {max_size: 1}",  # not on the way: a flow mapping elsewhere stays as it is
        "    workload:",
        "      time_zone: Europe/Paris  # where the hours are told",
        "      # the profiles",
        "      profiles:",
        "        rl:",
        "          kinds:",
        "            train:",  # it changed: a block, one key a line
        "              class: batch",
        "              jobs_per_day: 3",
        "            # introduces what follows old",  # the removed kind's own comment went with it, not this
        "          gpu_utilization: 0.5",
        "  # the next key",
        "  gpu-ci:other: 1",
    ]
    assert write_section(after, "s.yaml", "gpu-ci", "workload", wanted) == after  # nothing moved: nothing touched


def test_a_new_key_goes_after_the_one_before_it_or_in_the_place_of_the_first_removed() -> None:
    text = "config:\n  gpu-ci:platform:\n    w:\n      a: 1\n      old: 2  # x\n      b: 3\n"
    after = write_section(text, "s.yaml", "gpu-ci", "w", {"new": {"k": "Mon,Wed,Fri"}, "a": 1, "b": 3, "c": "13:00"})
    assert after.splitlines()[3:] == [
        "      a: 1",
        "      new:",
        "        k: Mon,Wed,Fri",
        "      b: 3",
        '      c: "13:00"',
    ]


def test_a_missing_section_is_added_at_the_end_of_platform_and_printed_as_it_sits() -> None:
    text = "config:\n  gpu-ci:platform:\n    pools:\n      a: 1\n  # next\n  gpu-ci:other: 2\n"
    after = write_section(text, "s.yaml", "gpu-ci", "workload", {"profiles": {"rl": {"kinds": {"k": {"x": 1}}}}})
    assert after.endswith(
        "      a: 1\n    workload:\n      profiles:\n        rl:\n          kinds:\n            k:\n"
        "              x: 1\n  # next\n  gpu-ci:other: 2\n"
    )
    assert section_text(after, "s.yaml", "gpu-ci", "workload").startswith("    workload:\n      profiles:\n")
    assert "# next" not in section_text(after, "s.yaml", "gpu-ci", "workload")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]\n", "s.yaml: no `config:` mapping"),
        ("config: {a: 1}\n", "s.yaml: no `gpu-ci:platform` mapping under config"),
        ("config:\n  gpu-ci:platform: {w: 1}\n", "s.yaml: platform is written in flow style"),
        ("config: [\n", "s.yaml:2: not valid YAML"),
    ],
)
def test_what_cannot_be_edited_in_place_is_one_edit_error(text: str, message: str) -> None:
    with pytest.raises(EditError) as refused:
        write_section(text, "s.yaml", "gpu-ci", "w", {"a": 1})
    assert str(refused.value).startswith(message)


def test_set_keys_refuses_a_flow_section_on_its_path() -> None:
    with pytest.raises(EditError, match=r"platform.pools.ci-compile is written in flow style"):
        set_keys(STACK, "s.yaml", "gpu-ci", [(("pools", "ci-compile", "max_size"), 2)])


SCALARS = st.one_of(
    st.integers(-1000, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    st.text(st.characters(codec="utf-8"), max_size=12).filter(lambda text: not read_apart(text)),
)
"""Texts a stack file can hold (`read_apart`: the CLI drops a leading line break, so the editor refuses `\\n`)."""
DEV_CONFIG = yaml.safe_load(DEV)["config"]
"""The dev stack's config as PyYAML reads it: what every edit of its workload must leave as it is."""
KEYS = st.text("abcdefghij-_:,# 0123456789", min_size=1, max_size=8)
VALUES = st.recursive(SCALARS, lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4))
@example({"0": "NO"})  # text to the CLI (YAML 1.2), false to PyYAML (1.1): written quoted
def test_any_section_written_into_the_dev_stack_reads_back_as_itself_and_leaves_the_rest(
    wanted: dict[str, Any],
) -> None:
    after = write_section(DEV, "Pulumi.dev.yaml", "gpu-ci", "workload", wanted)
    config = yaml.load(after, Loader=yaml.CSafeLoader)["config"]  # one read (libyaml) of the edited file
    after_platform = config["gpu-ci:platform"]
    assert after_platform["workload"] == wanted
    assert {k: v for k, v in after_platform.items() if k != "workload"} == {
        k: v for k, v in DEV_CONFIG["gpu-ci:platform"].items() if k != "workload"
    }
    assert {k: v for k, v in config.items() if k != "gpu-ci:platform"} == {
        k: v for k, v in DEV_CONFIG.items() if k != "gpu-ci:platform"
    }
    start = DEV.index("    workload:")
    assert after[:start] == DEV[:start]  # what precedes the section, byte for byte
    assert write_section(after, "Pulumi.dev.yaml", "gpu-ci", "workload", wanted) == after


@pytest.mark.parametrize("text", ["\n", "\n5m", "\t5m\nx", "\u2028a\nb"])
def test_text_the_cli_reads_otherwise_is_not_written(text: str) -> None:
    """The CLI writes a stack file again and reads that, dropping a leading line break (`\\n5m` is `5m` deployed)
    and refusing a leading tab: no stack file holds such text, so the editor refuses it rather than write it."""
    with pytest.raises(EditError, match="reads back as itself"):
        write_section(DEV, "Pulumi.dev.yaml", "gpu-ci", "workload", {"a": text})
    assert write_section(DEV, "Pulumi.dev.yaml", "gpu-ci", "workload", {"a": text[1:]})  # the same text less its lead
