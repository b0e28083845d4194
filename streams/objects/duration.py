"""Go/metav1 durations ("5m", "5m0s", "1h30m", "90s") as milliseconds, read wherever an object or an
args document carries one (plugin args, PodMigrationJob's ttl)."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def parse_duration(text: str | int | float) -> int:
    """Milliseconds of a Go duration string (a bare number is taken as seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"invalid duration {text!r}")
    if isinstance(text, (int, float)):
        return int(text * 1000)
    value = text.strip()
    negative = value.startswith("-")
    value = value.lstrip("+-")
    if value == "0":
        return 0
    pos, total = 0, 0.0
    for match in _DURATION.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_MS[match.group(2)]
        pos = match.end()
    if pos != len(value) or not value:
        raise ValueError(f'invalid duration "{text}"')
    return -int(total) if negative else int(total)


def format_duration(ms: int) -> str:
    """Go's ``time.Duration.String`` of ``ms`` milliseconds: "10s", "1m30s", "1h0m0s", "1.5s", "0s"."""
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds
