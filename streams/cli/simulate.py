"""``koord simulate``: publish a synthetic fleet (``node_agent.simulator``)."""

from __future__ import annotations

import asyncio
import signal

import click

from node_agent.simulator import Fleet, FleetArgs
from streams import kafka
from streams.cli import context
from streams.objects import Document, to_record
from streams.schemas import codec


def _encoded(manifests: list[dict], names: dict[str, str]) -> list[tuple[str, str, bytes]]:
    out = []
    for index, manifest in enumerate(manifests):
        record = to_record(Document("<simulator>", index, 1, manifest))
        out.append((names[record.topic], record.key, codec.encode(record.schema, record.record)))
    return out


@click.command()
@click.option("--nodes", default=FleetArgs.nodes, show_default=True)
@click.option("--pods-per-node", default=FleetArgs.pods_per_node, show_default=True)
@click.option("--seed", default=FleetArgs.seed, show_default=True)
@click.option("--speed", default=1.0, show_default=True, help="Simulated seconds per real second.")
@click.option("--duration", default=0, help="Simulated seconds to run (0: until stopped).")
def simulate(nodes: int, pods_per_node: int, seed: int, speed: float, duration: int) -> None:
    """Publish a simulated cluster: nodes, then pods arriving and finishing."""
    config = context.settings()
    names = context.topology(config).names()
    fleet = Fleet(FleetArgs(nodes=nodes, pods_per_node=pods_per_node, seed=seed))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        async with kafka.producer(context.bootstrap(config)) as producer:
            async def send(manifests):
                for topic, key, value in _encoded(manifests, names):
                    await producer.send(topic, key=key.encode(), value=value)
            await send(fleet.nodes())
            second = 0
            while not stop.is_set() and (duration == 0 or second < duration):
                await send(fleet.step(second))
                second += 1
                try:
                    await asyncio.wait_for(stop.wait(), timeout=1 / speed)
                except asyncio.TimeoutError:
                    pass
            await producer.flush()

    asyncio.run(main())


COMMANDS = (simulate,)
