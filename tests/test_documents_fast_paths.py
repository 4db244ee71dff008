"""The documents module's fast paths held against the plain versions they replace: a JSON answer's shape check
(strings taken out by a regex) refuses what a character-by-character walk refuses, and `compose_checked` builds
the tree `yaml.compose` builds, from one parse."""

from __future__ import annotations

import random

import pytest
import yaml
from support.paths import ROOT

from infra.documents import (
    STACK_FILE,
    YAML_LOADER,
    Budget,
    DocumentError,
    _check_json_shape,
    check_yaml_events,
    compose_checked,
)

SMALL = Budget(max_bytes=1 << 20, max_nodes=6, max_depth=3, kind="a JSON answer")


def _walked(text: str, budget: Budget) -> str | None:
    """The shape check as one loop over every character: the refusal it names, or None."""
    depth = values = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            values += 1
            if depth > budget.max_depth:
                return f"x: nested more than {budget.max_depth} levels deep{budget.not_content}"
        elif char in "]}":
            depth -= 1
        elif char == ",":
            values += 1
        if values > budget.max_nodes:
            return f"x: holds more than {budget.max_nodes} values{budget.not_content}"
    return None


def _checked(text: str, budget: Budget) -> str | None:
    try:
        _check_json_shape(text, "x", budget)
    except DocumentError as err:
        return str(err)
    return None


def test_the_shape_check_refuses_what_a_walk_over_every_character_refuses() -> None:
    rng = random.Random(26)
    alphabet = '"\\[]{},a'
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert _checked(text, SMALL) == _walked(text, SMALL), text


@pytest.mark.parametrize(
    "text",
    [
        '"' + '\\"' * 300_000,  # one string never closed, full of escaped quotes: each quote passed once
        '["' + '\\"' * 300_000 + "]",
        "[" * 50 + '"' + "\\" * 300_001,
        ('"a",' * 100_000) + "[[[[",
    ],
    ids=["unclosed-escaped-quotes", "in-a-list", "trailing-backslash", "many-strings-then-deep"],
)
def test_a_hostile_answer_is_checked_in_one_pass(text: str) -> None:
    """Bounded by the test's timeout, not a clock: a backtracking pattern takes hours on these (quadratic)."""
    budget = Budget(max_bytes=1 << 22, max_nodes=1_000_000, max_depth=3, kind="a JSON answer")
    assert _checked(text, budget) == _walked(text, budget)


def _mangled(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(chars))
        chars[at : at + rng.randint(0, 3)] = rng.choice(["", "&a ", "*a", "- ", ": ", "{", "]", "\t", "---\n", '"'])
    return "".join(chars)


def _composed_twice(text: str) -> object:
    try:
        check_yaml_events(text, "x", STACK_FILE)
        return yaml.compose(text, Loader=YAML_LOADER)
    except DocumentError as err:
        return str(err)
    except yaml.YAMLError as err:
        return type(err).__name__, str(err)


def _composed_once(text: str) -> object:
    try:
        return compose_checked(text, "x", STACK_FILE)
    except DocumentError as err:
        return str(err)
    except yaml.YAMLError as err:
        return type(err).__name__, str(err)


def _shape(node: object) -> object:
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        children = (
            [(_shape(k), _shape(v)) for k, v in node.value]
            if isinstance(node, yaml.MappingNode)
            else [_shape(child) for child in node.value]
        )
        return node.tag, node.start_mark.line, children
    if isinstance(node, yaml.ScalarNode):
        return node.tag, node.value, node.style, node.start_mark.line
    return node


def test_compose_checked_builds_what_check_then_compose_builds() -> None:
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    rng = random.Random(30)
    texts = [dev, "", "a: &x [1]\nb: *x\n", "*x\n", "a: 1\n---\nb: 2\n"] + [_mangled(dev, rng) for _ in range(150)]
    for text in texts:
        assert _shape(_composed_once(text)) == _shape(_composed_twice(text)), text[:200]
