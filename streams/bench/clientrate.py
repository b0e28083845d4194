"""A client's QPS/burst against the API server, set alike for kube-scheduler and the bridge in the race.

kube-scheduler's ``clientConnection.qps`` / ``burst`` feed client-go's token bucket
(``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``); its defaults are 50 / 100
(``pkg/scheduler/apis/config/v1/defaults.go``). ``unthrottled`` is no client-side limit: client-go makes no
rate limiter when qps <= 0, and kube-scheduler is given ``qps: -1`` because a 0 is defaulted to 50.

The bridge gets the same setting through its ``koord bridge --kube-api-qps/--kube-api-burst`` options, ``qps``
0 meaning no limit.
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


BRIDGE_QPS, BRIDGE_BURST = "--kube-api-qps", "--kube-api-burst"
"""The ``koord bridge`` options of its client rate limit (``streams.cli.bridge``)."""


def bridge_flags(rate: ClientRate) -> list[str]:
    """Arguments of ``koord bridge`` for ``rate``."""
    return [BRIDGE_QPS, "0"] if rate.unthrottled else [BRIDGE_QPS, f"{rate.qps:g}", BRIDGE_BURST, str(rate.burst)]


def bridge_setting(rate: ClientRate | None) -> str:
    """What the bridge ran with, as the output says it."""
    return "its default (qps 50 / burst 100)" if rate is None else rate.describe()
