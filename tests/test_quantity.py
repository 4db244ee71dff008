"""Kubernetes quantities: exact values, and strict rejection of what Kubernetes would misread."""

from fractions import Fraction

import pytest

from infra.quantity import Cpu, Memory, QuantityError


@pytest.mark.parametrize(
    ("text", "millicores"),
    [("3000m", 3000), ("3", 3000), ("0.5", 500), ("3800m", 3800), ("1.25", 1250), (2, 2000), ("2e0", 2000)],
)
def test_cpu_parses_exactly(text: object, millicores: int) -> None:
    cpu = Cpu.parse(text)
    assert cpu.millicores == millicores
    assert cpu.text == str(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("3 cores", "not a Kubernetes CPU quantity"),
        ("3cores", "not a Kubernetes CPU quantity"),
        ("", "not a Kubernetes CPU quantity"),
        (" 3", "not a Kubernetes CPU quantity"),
        ("-1", "negative"),
        ("1Gi", "binary suffix 'Gi' is for memory"),
        ("0", "greater than zero"),
        ("0.0001", "finer than 1m"),
        (1.5, "string"),
        (True, "string"),
        ("\uff11\uff10\uff10m", "not a Kubernetes CPU quantity"),  # full-width digits: Kubernetes takes ASCII only
        ("\u0661", "not a Kubernetes CPU quantity"),  # an Arabic-Indic one
    ],
)
def test_cpu_rejects(text: object, reason: str) -> None:
    with pytest.raises(QuantityError, match=reason):
        Cpu.parse(text)


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("8Gi", 8 * 2**30),
        ("16Gi", 16 * 2**30),
        ("512Mi", 512 * 2**20),
        ("1G", 10**9),
        ("1.5Gi", 3 * 2**29),
        ("1e3", 1000),
        ("100", 100),
    ],
)
def test_memory_parses_exactly(text: str, amount: int) -> None:
    assert Memory.parse(text).bytes == amount


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("8m", "did you mean Mi or M"),
        ("8 GB", "not a Kubernetes memory quantity"),
        ("8GB", "not a Kubernetes memory quantity"),
        ("8gi", "not a Kubernetes memory quantity"),
        ("-1Gi", "negative"),
        ("0Gi", "greater than zero"),
    ],
)
def test_memory_rejects(text: str, reason: str) -> None:
    with pytest.raises(QuantityError, match=reason):
        Memory.parse(text)


def test_round_trips_from_numbers() -> None:
    assert str(Cpu.from_millicores(7000)) == "7"
    assert str(Cpu.from_millicores(6500)) == "6500m"
    assert str(Memory.from_bytes(44 * 2**30)) == "44Gi"
    assert str(Memory.from_bytes(1536 * 2**20)) == "1536Mi"
    assert Memory.parse("40Gi").gib == Fraction(40)


@pytest.mark.parametrize("text", ["1e999999999", "1e9999999", "5e41", "9" * 65, "1" + "0" * 70 + "e5"])
def test_huge_exponents_and_long_numbers_are_refused_before_computing(text: str) -> None:
    """`1e999999999` used to hang (10**999999999 as an exact fraction): now it is refused by the checks that run
    before any computation (the text's length, the exponent's size), which these messages come from."""
    for parse in (Cpu.parse, Memory.parse):
        with pytest.raises(QuantityError, match=r"exponent \d+ is too large|longer than 64 characters"):
            parse(text)


def test_a_trailing_newline_is_not_a_quantity() -> None:
    with pytest.raises(QuantityError, match="not a Kubernetes CPU quantity"):
        Cpu.parse("3\n")
    with pytest.raises(QuantityError, match="not a Kubernetes memory quantity"):
        Memory.parse("8Gi\n")


def test_a_tiny_exponent_is_zero_not_a_hang() -> None:
    with pytest.raises(QuantityError, match="greater than zero"):
        Memory.parse("1e-999999999")
