"""The bridge process: the reflectors, and in active mode the actuator, until SIGTERM or SIGINT.

Start order: the checkpoint, the producer, then one reflector per watched resource (Nodes listed before
Pods, so pods find their nodes), then the actuator, which waits until Pods and Nodes are listed.
"""

from __future__ import annotations

import asyncio
import logging

from streams import kafka
from streams.stopsignals import stop_on_signals
from streams.bridge.actuator import Actuator
from streams.bridge.api import KubeApi
from streams.bridge.checkpoint import Checkpoint
from streams.bridge.config import ACTIVE, BridgeConfig
from streams.bridge.reflector import Reflector
from streams.bridge.resources import WATCHED
from streams.bridge.view import ClusterView
from streams.signing import signer

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.sqlite"
ACTED_ON_TOPICS = ("decisions", "noderesources", "quotastatus", "reservations", "podmigrationjobs", "podgroups")
"""Topics (topology ids) the actuator reads in active mode (``actuator.ACTED_ON``)."""


async def run(config: BridgeConfig, bootstrap: str, topics: dict[str, str]) -> None:
    """Run until a SIGTERM or SIGINT; then stop every task and close the clients."""
    stop = asyncio.Event()
    stop_on_signals(stop)
    checkpoint = Checkpoint(config.state_dir / CHECKPOINT_FILE)
    api = KubeApi(config.kubeconfig, config.context, config.watch_timeout_s, config.kube_api_qps, config.kube_api_burst)
    view = ClusterView()
    log.info("bridge in %s mode against %s (client rate limit %g qps, burst %d)", config.mode, api.server,
             config.kube_api_qps, config.kube_api_burst)
    try:
        async with kafka.producer(bootstrap) as producer:
            tasks = [asyncio.create_task(Reflector(resource, api, producer, topics, checkpoint, view, config).run(),
                                         name=resource.name) for resource in WATCHED]
            consumer = None
            if config.mode == ACTIVE:
                consumer = kafka.consumer(bootstrap, [topics[topic_id] for topic_id in ACTED_ON_TOPICS],
                                          config.consumer_group, from_beginning=True)
                await consumer.start()
                ids = {topics[topic_id]: topic_id for topic_id in ACTED_ON_TOPICS}
                actuator = Actuator(api, consumer, checkpoint, view, config, producer, topics["deadletters"], signer(),
                                    ids)
                tasks.append(asyncio.create_task(actuator.run(), name="actuator"))
            stopped = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if consumer is not None:
                await consumer.stop()
            for task in done - {stopped}:
                task.result()
    finally:
        await api.close()
        checkpoint.close()
    log.info("bridge stopped")
