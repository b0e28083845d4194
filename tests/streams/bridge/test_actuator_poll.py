"""One poll of the actuator: the records of one key (a pod, a node) in offset order, different keys at once,
at most ``write_concurrency`` at a time; the poll ends when every write has."""

import asyncio

from streams.bridge.actuator import Actuator
from streams.bridge.config import BridgeConfig
from streams.schemas import codec
from tests.streams.fakeconsumer import message


def decision(name: str, decision_id: str) -> bytes:
    return codec.encode("SchedulingDecision", {
        "decisionId": decision_id, "pod": {"namespace": "default", "name": name, "uid": None},
        "result": "Scheduled", "nodeName": "n1", "timestamp": 0,
        "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": 0,
                      "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0}})


def test_one_keys_records_in_order_different_keys_at_once_within_the_bound():
    actuator = Actuator(None, None, None, None, BridgeConfig(kubeconfig=None, write_concurrency=3))
    started, ended, in_flight, most = [], [], set(), [0]

    async def handle(schema, record):
        started.append(record["decisionId"])
        in_flight.add(record["decisionId"])
        most[0] = max(most[0], len(in_flight))
        await asyncio.sleep(0.001 * (3 - int(record["decisionId"][-1])))
        in_flight.discard(record["decisionId"])
        ended.append(record["decisionId"])

    actuator.handle = handle
    pods = [f"web-{i}" for i in range(6)]
    messages = [message("koord.decisions", offset, decision(name, f"{name}/{turn}"), key=f"default/{name}".encode())
                for offset, (turn, name) in enumerate((turn, name) for turn in range(3) for name in pods)]
    asyncio.run(actuator.handle_poll(messages))
    assert sorted(ended) == sorted(f"{name}/{turn}" for name in pods for turn in range(3))
    for name in pods:
        assert [d for d in ended if d.startswith(f"{name}/")] == [f"{name}/{turn}" for turn in range(3)]
    assert most[0] == 3, "three keys at once, never more"
