"""Kubernetes value formats the scheduler reads and prints.

``quantity_string`` prints a canonical integer the way apimachinery's
``Quantity.String()`` prints the quantity Koordinator builds from it
(``createQuantity``): cpu as a DecimalSI milli-quantity ("500m", "2", "2k"),
memory as BinarySI ("1Gi"; below 1024 it falls back to DecimalSI, "20"),
anything else DecimalSI.
"""

from __future__ import annotations

_DECIMAL = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"), (-9, "n"))
_BINARY = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def _decimal(mantissa: int, exponent: int) -> str:
    """DecimalSI canonical form of mantissa * 10**exponent: strip factors of 1000 into the suffix."""
    if mantissa == 0:
        return "0"
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    for power, suffix in _DECIMAL:
        if exponent == power:
            return f"{mantissa}{suffix}"
    return f"{mantissa}e{exponent}"


def quantity_string(resource: str, value: int) -> str:
    if resource == "cpu":
        return _decimal(value, -3)
    if resource == "memory" and not -1024 < value < 1024:
        for power, suffix in _BINARY:
            if value % (1 << power) == 0:
                return f"{value >> power}{suffix}"
        return str(value)
    return _decimal(value, 0)


def resource_list_string(resources: dict[str, int]) -> str:
    """Koordinator's ``printResourceList``: sorted "name:quantity" joined by commas, "<empty>" when empty."""
    if not resources:
        return "<empty>"
    return ",".join(sorted(f"{name}:{quantity_string(name, value)}" for name, value in resources.items()))
