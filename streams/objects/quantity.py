"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3") as exact numbers and canonical integers.

The grammar and rounding follow ``k8s.io/apimachinery/pkg/api/resource``
(``ParseQuantity``), so a manifest means here what it means to kubectl::

    quantity ::= [+-] number suffix
    number   ::= digits | digits "." digits | digits "." | "." digits
    suffix   ::= "" | n u m k M G T P E        (decimal SI, 10^-9 .. 10^18)
               | Ki Mi Gi Ti Pi Ei             (binary SI, 2^10 .. 2^60)
               | (e|E) [+-] digits             (decimal exponent)

Like Kubernetes, a parsed value is rounded away from zero to a whole number
of nano-units (``0.5n`` is ``1n``) and a binary-suffixed value is capped at
2^63-1. One difference: a number needs a digit here, where apimachinery's
scanner reads "Mi", "." or "+" as zero.

Kafka records carry integers (Avro ``long``): ``cpu`` in milli-cores, every
other resource in its base unit, rounded away from zero like
``Quantity.MilliValue()`` and ``Quantity.Value()`` (ceil for the non-negative
values manifests allow). A value that does not fit 64 bits is an error rather
than the wrapped number Go would return.
"""

import math
from collections.abc import Mapping
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal, localcontext

DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
"""Decimal SI suffix -> power of ten."""

BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""Binary SI suffix -> power of two."""

MILLI_RESOURCES = frozenset({"cpu", "requests.cpu", "limits.cpu"})
"""Resources whose canonical unit is the milli-unit (Koordinator's batch-cpu is already milli-cores)."""

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
_NANO = Decimal("1e-9")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_BYTE_SUFFIXES = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity, or does not fit its canonical unit; names the text."""

    def __init__(self, reason: str, text: object):
        self.reason = reason
        self.text = str(text)
        super().__init__(f'{reason}: "{self.text}"')


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """The exact value of a quantity, rounded and capped as Kubernetes does."""
    text = _quantity_text(value)
    negative, mantissa, suffix = _split(text)
    with localcontext(Context(prec=len(text) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        if suffix in DECIMAL_SUFFIXES:
            amount = mantissa.scaleb(DECIMAL_SUFFIXES[suffix])
        elif suffix in BINARY_SUFFIXES:
            amount = min(mantissa * (1 << BINARY_SUFFIXES[suffix]), Decimal(INT64_MAX))
        else:
            amount = mantissa.scaleb(_exponent(suffix, text))
        if amount.as_tuple().exponent < -9:
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
        return -amount if negative else amount


def to_canonical(resource_name: str, value: str | int | float | Decimal) -> int:
    """The integer a record carries: milli-units for cpu, base units otherwise, rounded away from zero."""
    amount = parse_quantity(value)
    with localcontext(Context(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        scaled = amount.scaleb(3) if resource_name in MILLI_RESOURCES else amount
    if not INT64_MIN <= scaled <= INT64_MAX:
        unit = "milli-units" if resource_name in MILLI_RESOURCES else "units"
        raise QuantityError(f"quantity does not fit a 64-bit integer of {resource_name} {unit}", value)
    return int(scaled.to_integral_value(rounding=ROUND_UP))


_DECIMAL_SUFFIXES = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3))


def format_quantity(resource_name: str, value: int) -> str:
    """Display form of a canonical integer: "1500m"/"2" for cpu; byte counts as Kubernetes prints a
    BinarySI quantity: "1Gi" when exactly binary, else decimal "33G" when exact, else plain bytes."""
    if resource_name in MILLI_RESOURCES:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value != 0 and _is_bytes(resource_name):
        for suffix, power in _BYTE_SUFFIXES:
            if value % (1 << power) == 0:
                return f"{value >> power}{suffix}"
        for suffix, power in _DECIMAL_SUFFIXES:
            if value % 10**power == 0:
                return f"{value // 10**power}{suffix}"
    return str(value)


def resource_list(mapping: Mapping[str, object]) -> dict[str, int]:
    """A ResourceList (name -> quantity) in canonical integers; QuantityError names the resource."""
    result = {}
    for name, value in mapping.items():
        try:
            result[name] = to_canonical(name, value)
        except QuantityError as err:
            raise QuantityError(f"{name}: {err.reason}", err.text) from None
    return result


def _quantity_text(value: object) -> str:
    if isinstance(value, bool):
        raise QuantityError("not a quantity", value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError("not a valid quantity", value)
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str):
        return value
    raise QuantityError("not a quantity", value)


def _split(text: str) -> tuple[bool, Decimal, str]:
    """Sign, unsigned number and suffix, scanned like apimachinery's parseQuantityString."""
    if not text:
        raise QuantityError("not a valid quantity", text)
    pos, end = 0, len(text)
    negative = text[0] == "-"
    if text[0] in "+-":
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos]
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos != end or not (whole or fraction):
        raise QuantityError("not a valid quantity", text)
    number = Decimal(f"{whole or 0}.{fraction}" if fraction else whole)
    return negative, number, text[suffix_start:]


def _exponent(suffix: str, text: str) -> int:
    """The power of ten of an "e"/"E" suffix; apimachinery reads it with strconv.ParseInt into int32."""
    digits = suffix[1:]
    unsigned = digits[1:] if digits[:1] in ("+", "-") else digits
    if suffix[:1] not in ("e", "E") or not unsigned or not set(unsigned) <= _DIGITS:
        raise QuantityError("not a valid quantity suffix", text)
    exponent = int(digits)
    if not -(2**31) <= exponent < 2**31:
        raise QuantityError("quantity exponent out of range", text)
    return exponent


def _is_bytes(resource_name: str) -> bool:
    base = resource_name.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    return base.endswith("memory") or base.endswith("storage") or base.startswith("hugepages-")
