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
