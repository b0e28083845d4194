"""Koordinator's quantity arithmetic on koordstream's canonical integers.

Records carry cpu as milli-cores and memory as bytes (``int``); the extended
resources ``kubernetes.io/batch-cpu`` / ``mid-cpu`` are integers whose unit is
the milli-core. These helpers reproduce, bit for bit, what Koordinator does
with ``resource.Quantity`` (``pkg/util/resource.go`` and apimachinery), so the
numbers and the messages match:

- ``MultiplyMilliQuant(q, f)`` = ``int64(float64(q.MilliValue()) * f)`` milli
  (Go's conversion truncates toward zero, as Python's ``int()`` does);
- ``MultiplyQuant(q, f)`` = ``int64(float64(q.Value()) * f)``;
- ``Quantity.ScaledValue(scale)`` rounds *away from zero* when not exact
  (apimachinery ``negativeScaleInt64``): 15.3G scaled to Giga is 16;
- ``IsQuantityDiff(old, new, t)`` = ``|new.milli - old.milli| > old.milli * t``
  compared as float64;
- ``fmt``'s ``%v`` of a float64 (``format_go_float``) prints the shortest
  representation, ``1`` for 1.0, ``0.65`` for 0.65, ``1e+06`` for 1000000.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

GIGA = 9
"""The scale of the ``(GB)`` figures in Koordinator's messages (``resource.Giga``)."""


def multiply_milli(milli: int, factor: float) -> int:
    """``util.MultiplyMilliQuant`` on a value already in milli units (cpu)."""
    return int(float(milli) * factor)


def multiply(value: int, factor: float) -> int:
    """``util.MultiplyQuant`` on a value in base units (memory bytes)."""
    return int(float(value) * factor)


def scaled_value(value: int, scale: int = GIGA) -> int:
    """``Quantity.ScaledValue(scale)``: ``value / 10**scale``, rounded away from zero."""
    unit = 10**scale
    quotient, remainder = divmod(abs(value), unit)
    if remainder:
        quotient += 1
    return quotient if value >= 0 else -quotient


def ceil_milli_to_value(milli: int) -> int:
    """``Quantity.Value()`` of a quantity given in milli units: rounds up (apimachinery)."""
    return -(-milli // 1000)


def is_quantity_diff(old: int, new: int, threshold: float) -> bool:
    """``util.IsQuantityDiff`` on two values of the same unit (compared as milli values)."""
    old_milli, new_milli = old * 1000, new * 1000
    return math.fabs(float(new_milli - old_milli)) > float(old_milli) * threshold


def is_resource_diff(old: Mapping[str, int], new: Mapping[str, int], name: str, threshold: float) -> bool:
    """``util.IsResourceDiff``: presence differs, or both present and ``is_quantity_diff``."""
    old_has, new_has = name in old, name in new
    if old_has != new_has:
        return True
    if not old_has:
        return False
    return is_quantity_diff(old[name], new[name], threshold)


def divide_milli(milli: int, divisor: float) -> int:
    """``DivideResourceList`` on one milli value: ``ceil(milli / divisor)``; unchanged for 0."""
    if divisor == 0:
        return milli
    return int(math.ceil(float(milli) / divisor))


def format_go_float(value: float) -> str:
    """Go's ``fmt`` ``%v`` of a float64 (``strconv.FormatFloat(v, 'g', -1, 64)``)."""
    if value == 0:
        return "0"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    digits = repr(abs(value))
    mantissa, _, exponent_text = digits.partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = int(exponent_text) if exponent_text else 0
    significant = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    significant = significant.rstrip("0") or "0"
    decimal_exponent = exponent + len(whole) - 1 - leading_zeros
    sign = "-" if value < 0 else ""
    if decimal_exponent < -4 or decimal_exponent >= 6:
        head, tail = significant[0], significant[1:]
        body = f"{head}.{tail}" if tail else head
        return f"{sign}{body}e{'-' if decimal_exponent < 0 else '+'}{abs(decimal_exponent):02d}"
    if decimal_exponent < 0:
        return f"{sign}0.{'0' * (-decimal_exponent - 1)}{significant}"
    integer_digits = decimal_exponent + 1
    if len(significant) <= integer_digits:
        return f"{sign}{significant}{'0' * (integer_digits - len(significant))}"
    return f"{sign}{significant[:integer_digits]}.{significant[integer_digits:]}"


def format_ratio(value: float) -> str:
    """``strconv.FormatFloat(v, 'f', 2, 64)``: the annotation form of a ratio, e.g. ``1.20``."""
    return f"{value:.2f}"
