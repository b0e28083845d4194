"""Clock ticks: the only place wall-clock time enters the aggregates.

Every worker publishes a Tick every ``TICK_INTERVAL_S``; the router copies it
to every inbox partition. Aggregates read time only from event timestamps,
so ticks let time pass between other events (metric degrade, backoff).
Ticks from several workers are harmless: time only moves forward, and the
tick is recorded in the inbox like any other event, so replay sees the same
times. A tick is caused by no consumed record, so it is sent outside any
transaction (``streams.agents.transactions.send_outside_transactions``).
"""

from __future__ import annotations

import time

import faust

from streams.agents.topics import raw_topic
from streams.agents.transactions import send_outside_transactions
from streams.schemas import codec
from streams.topology import Topology

TICK_INTERVAL_S = 10.0


def register(app: faust.App, topology: Topology) -> None:
    ticks = raw_topic(app, topology.name("ticks"))

    @app.timer(interval=TICK_INTERVAL_S)
    async def tick() -> None:
        await send_outside_transactions(app, ticks, b"tick", codec.encode("Tick", {"timestamp": int(time.time() * 1000)}))
