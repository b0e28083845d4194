"""Quantities: Kubernetes' own parse table (apimachinery quantity_test.go), canonical integers, display."""

from decimal import Decimal

import pytest

from streams.objects.quantity import QuantityError, format_quantity, parse_quantity, resource_list, to_canonical

INT64_MAX = 2**63 - 1

# (text, exact value) from apimachinery's TestQuantityParse, value = unscaled * 10^exponent there.
KUBERNETES_PARSE = [
    ("0", "0"), ("0n", "0"), ("0u", "0"), ("0m", "0"), ("0Ki", "0"), ("0k", "0"), ("0Mi", "0"), ("0M", "0"),
    ("0Gi", "0"), ("0G", "0"), ("0Ti", "0"), ("0T", "0"),
    ("1", "1"),
    ("1Ki", "1024"), ("8Ki", "8192"), ("7Mi", str(7 * 2**20)), ("6Gi", str(6 * 2**30)), ("5Ti", str(5 * 2**40)),
    ("4Pi", str(4 * 2**50)), ("3Ei", str(3 * 2**60)), ("10Ti", str(10 * 2**40)), ("100Ti", str(100 * 2**40)),
    ("5n", "5e-9"), ("4u", "4e-6"), ("3m", "3e-3"), ("9", "9"), ("8k", "8e3"), ("50k", "5e4"), ("7M", "7e6"),
    ("6G", "6e9"), ("5T", "5e12"), ("40T", "4e13"), ("300T", "3e14"), ("2P", "2e15"), ("1E", "1e18"),
    ("1E-3", "1e-3"), ("1e3", "1e3"), ("1E6", "1e6"), ("1e9", "1e9"), ("1E12", "1e12"), ("1e15", "1e15"),
    ("1E18", "1e18"), ("1e14", "1e14"), ("1e13", "1e13"), ("100.035k", "100035"),
    ("0.001", "1e-3"), ("0.0005k", "5e-1"), ("0.005", "5e-3"), ("0.05", "5e-2"), ("0.5", "5e-1"),
    ("0.00050k", "5e-1"), ("0.00500", "5e-3"), ("0.05000", "5e-2"), ("0.50000", "5e-1"), ("0.5e0", "5e-1"),
    ("0.5e-1", "5e-2"), ("0.5e-2", "5e-3"), ("10.035M", "10035e3"),
    ("1.2e3", "12e2"), ("1.3E+6", "13e5"), ("1.40e9", "14e8"), ("1.53E12", "153e10"), ("1.6e15", "16e14"),
    ("1.7E18", "17e17"),
    ("9.01", "901e-2"), ("8.1k", "81e2"), ("7.123456M", "7123456"), ("6.987654321G", "6987654321"),
    ("5.444T", "5444e9"), ("40.1T", "401e11"), ("300.2T", "3002e11"), ("2.5P", "25e14"), ("1.01E", "101e16"),
    ("3.001n", "4e-9"), ("1.1E-9", "2e-9"), ("0.0000000001", "1e-9"), ("0.0000000005", "1e-9"),
    ("0.00000000050", "1e-9"), ("0.5e-9", "1e-9"), ("0.9n", "1e-9"), ("0.00000012345", "124e-9"),
    ("0.00000012354", "124e-9"), ("9Ei", str(INT64_MAX)), ("9223372036854775807Ki", str(INT64_MAX)),
    ("12E", "12e18"),
    ("100.035Ki", "10243584e-2"), ("0.5Mi", str(2**19)), ("0.05Gi", "536870912e-1"), ("0.025Ti", "274877906944e-1"),
    ("0.000000000001Ki", "2e-9"), (".001", "1e-3"), (".0001k", "100e-3"), ("1.", "1"), ("1.G", "1e9"),
]

# apimachinery's invalid list, then the suffix-only texts its scanner reads as zero and we refuse.
INVALID = [
    "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", "",
    "Mi", ".", "+", "-.", "e3", "1e", "1e+", "1Ki1", "0x10",
]


@pytest.mark.parametrize(("text", "expected"), KUBERNETES_PARSE, ids=[text for text, _ in KUBERNETES_PARSE])
def test_parse_matches_kubernetes(text, expected):
    assert parse_quantity(text) == Decimal(expected)
    assert parse_quantity("+" + text) == Decimal(expected)
    assert parse_quantity("-" + text) == -Decimal(expected)


@pytest.mark.parametrize("text", INVALID, ids=repr)
def test_invalid_text_is_refused_and_named(text):
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.text == text
    assert f'"{text}"' in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(64, "64"), (-1, "-1"), (0.5, "0.5"), (1e-05, "0.00001"), (1e20, "1e20"), (Decimal("2.5"), "2.5")],
    ids=["int", "negative-int", "float", "small-float", "large-float", "decimal"],
)
def test_yaml_numbers_are_quantities(value, expected):
    assert parse_quantity(value) == Decimal(expected)


@pytest.mark.parametrize("value", [True, None, [1], float("nan"), float("inf")], ids=repr)
def test_non_quantities_are_refused(value):
    with pytest.raises(QuantityError):
        parse_quantity(value)


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        ("cpu", "1", 1000),
        ("cpu", "100m", 100),
        ("cpu", "0.1", 100),
        ("cpu", "1.0001", 1001),
        ("cpu", "1n", 1),
        ("cpu", 64, 64000),
        ("cpu", 0.5, 500),
        ("requests.cpu", "2", 2000),
        ("limits.cpu", "500m", 500),
        ("kubernetes.io/batch-cpu", "1500", 1500),
        ("kubernetes.io/mid-cpu", "1.5", 2),
        ("memory", "1Ki", 1024),
        ("memory", "1.5", 2),
        ("memory", "0.5Mi", 524288),
        ("memory", "1e3", 1000),
        ("memory", "1500m", 2),
        ("memory", "9Ei", INT64_MAX),
        ("kubernetes.io/batch-memory", "1Gi", 2**30),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "1", 1),
        ("cpu", "-9.01", -9010),
        ("memory", "-1.5", -2),
    ],
    ids=lambda value: str(value),
)
def test_canonical_rounds_away_from_zero_like_milli_value_and_value(resource, text, expected):
    assert to_canonical(resource, text) == expected


@pytest.mark.parametrize(
    ("resource", "text"),
    [("cpu", "9E"), ("cpu", "9223372036854775808m"), ("memory", "1e19"), ("memory", "-1e19"), ("cpu", "1e999")],
    ids=lambda value: str(value),
)
def test_canonical_out_of_int64_range_is_refused(resource, text):
    with pytest.raises(QuantityError, match="does not fit a 64-bit integer"):
        to_canonical(resource, text)


def test_canonical_int64_boundaries_fit():
    assert to_canonical("memory", str(INT64_MAX)) == INT64_MAX
    assert to_canonical("cpu", "9223372036854775807m") == INT64_MAX


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 0, "0"),
        ("cpu", 1, "1m"),
        ("memory", 2**30, "1Gi"),
        ("memory", 1536 * 2**20, "1536Mi"),
        ("memory", 1000, "1k"),
        ("memory", 1001, "1001"),
        ("kubernetes.io/batch-memory", 33 * 10**9, "33G"),
        ("memory", 1024, "1Ki"),
        ("memory", 0, "0"),
        ("kubernetes.io/batch-memory", 2**31, "2Gi"),
        ("ephemeral-storage", 10 * 2**30, "10Gi"),
        ("hugepages-2Mi", 2**21, "2Mi"),
        ("kubernetes.io/batch-cpu", 1500, "1500"),
        ("pods", 1024, "1024"),
        ("nvidia.com/gpu", 2, "2"),
    ],
    ids=lambda value: str(value),
)
def test_format_quantity(resource, value, expected):
    assert format_quantity(resource, value) == expected
    assert to_canonical(resource, format_quantity(resource, value)) == value


def test_resource_list_converts_each_resource():
    assert resource_list({"cpu": "250m", "memory": "64Mi", "pods": 10}) == {"cpu": 250, "memory": 64 << 20, "pods": 10}


def test_resource_list_error_names_resource_and_text():
    with pytest.raises(QuantityError, match=r'^memory: not a valid quantity: "12x"$'):
        resource_list({"cpu": "1", "memory": "12x"})
