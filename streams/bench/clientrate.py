"""A client's QPS/burst against the API server, set alike for kube-scheduler and the bridge in the race.

kube-scheduler's ``clientConnection.qps`` / ``burst`` feed client-go's token bucket
(``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``); its defaults are 50 / 100
(``pkg/scheduler/apis/config/v1/defaults.go``). ``unthrottled`` is no client-side limit: client-go makes no
rate limiter when qps <= 0, and kube-scheduler is given ``qps: -1`` because a 0 is defaulted to 50.

The bridge gets the same setting through its own ``koord bridge`` options, found by name (the options
whose names hold ``qps`` and ``burst``), ``qps`` 0 meaning no limit. A bridge without such options runs
unthrottled whatever is asked, and :func:`bridge_setting` says so in the output.
"""

from __future__ import annotations

import dataclasses

UNTHROTTLED_NAME = "unthrottled"


@dataclasses.dataclass(frozen=True)
class ClientRate:
    qps: float
    """Requests a second; 0 or less: no client-side limit."""
    burst: int

    @property
    def unthrottled(self) -> bool:
        return self.qps <= 0

    def describe(self) -> str:
        return UNTHROTTLED_NAME if self.unthrottled else f"qps {self.qps:g} / burst {self.burst}"


KUBE_SCHEDULER_DEFAULT = ClientRate(50.0, 100)
UNTHROTTLED = ClientRate(-1.0, 0)


def parse(text: str) -> ClientRate:
    """``QPS/BURST`` (e.g. ``50/100``) or ``unthrottled``."""
    if text.strip().lower() == UNTHROTTLED_NAME:
        return UNTHROTTLED
    qps, slash, burst = text.partition("/")
    try:
        rate = ClientRate(float(qps), int(burst))
    except ValueError:
        raise ValueError(f"client rate: expected QPS/BURST (e.g. 50/100) or {UNTHROTTLED_NAME}, got {text!r}") from None
    if not slash or rate.qps <= 0 or rate.burst < 1:
        raise ValueError(f"client rate: QPS must be > 0 and BURST >= 1 in QPS/BURST (or say {UNTHROTTLED_NAME}), "
                         f"got {text!r}")
    return rate


def kube_scheduler_connection(rate: ClientRate) -> dict:
    """kube-scheduler's ``clientConnection`` qps/burst for ``rate``."""
    return {"qps": rate.qps, "burst": rate.burst}


def bridge_options() -> tuple[str, str] | None:
    """The ``koord bridge`` flags that set its client qps and burst, or None when it has none."""
    from streams.cli.bridge import bridge

    flags = {name: next((param.opts[0] for param in bridge.params if name in (param.name or "")), None)
             for name in ("qps", "burst")}
    return (flags["qps"], flags["burst"]) if all(flags.values()) else None


def bridge_flags(rate: ClientRate) -> list[str]:
    """Arguments of ``koord bridge`` for ``rate`` (none when the bridge has no such options)."""
    options = bridge_options()
    if options is None:
        return []
    qps, burst = options
    return [qps, "0"] if rate.unthrottled else [qps, f"{rate.qps:g}", burst, str(rate.burst)]


def bridge_setting(rate: ClientRate | None) -> str:
    """What the bridge ran with, as the output says it."""
    if bridge_options() is None:
        return f"{UNTHROTTLED_NAME} (koord bridge has no client qps/burst option)"
    return "its default" if rate is None else rate.describe()
