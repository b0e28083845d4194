"""Issue 37 failure 10 on both brokers: a pod the router dead-letters is not in ``koord get`` (it is in
``koord get deadletters``). Before, the read model checked less than the router: a pod over the record size
limit showed as a live pod, and so did a Pod record whose manifest says ``cpu: 999`` while its typed request,
what the scheduler uses, is 100m (which the router forwarded and the scheduler placed)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from streams import kafka, limits
from streams.objects import load_and_validate
from streams.schemas import codec

pytestmark = pytest.mark.integration

NAMESPACE = "refused-not-shown"


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): these records are forged, not applied."""
    return own_cluster


def pod(name: str, cpu: str = "100m") -> dict:
    [record] = load_and_validate("-", stdin_text=f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}}}
spec:
  containers: [{{name: main, image: app, resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}}}]
""")
    return record.record


def with_spec(record: dict, **fields) -> dict:
    manifest = json.loads(record["manifest"])
    manifest["spec"].update(fields)
    return {**record, "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":"))}


def oversized() -> bytes:
    """A valid pod, its manifest padded to just over the record size limit (``koord apply`` refuses it)."""
    key, hostname = f"{NAMESPACE}/oversized", 1_040_000
    size = limits.record_size(key, codec.encode("Pod", with_spec(pod("oversized"), hostname="h" * hostname)))
    value = codec.encode("Pod", with_spec(pod("oversized"), hostname="h" * (hostname + limits.RECORD_MAX_BYTES
                                                                           - size + 100)))
    assert limits.too_big(value, key) and len(value) < limits.PRODUCER_MAX_BYTES - 2_000
    return value


def contradicting() -> bytes:
    """A pod whose typed request is 100m cpu while its manifest's container asks for 999 cpus."""
    record = pod("contradicting")
    manifest = json.loads(record["manifest"])
    manifest["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "999"
    return codec.encode("Pod", {**record, "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":"))})


async def _send(bootstrap: str, topic: str, records: list[tuple[str, bytes]]) -> None:
    async with kafka.producer(bootstrap) as producer:
        for key, value in records:
            await (await producer.send(topic, key=key.encode(), value=value))


def _letters(cluster, name: str) -> set[str]:
    return {letter["stage"] for letter in cluster.koord_json("get", "deadletters")["items"]
            if letter["key"] == f"{NAMESPACE}/{name}"}


def test_pods_the_router_dead_letters_are_not_shown_by_koord_get(cluster):
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="""\
apiVersion: v1
kind: Node
metadata: {name: refused-not-shown-node}
status: {capacity: {cpu: "8", memory: 16Gi, pods: "110"}, allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
""")
    asyncio.run(_send(cluster.bootstrap, cluster.topology.name("pods"),
                      [(f"{NAMESPACE}/oversized", oversized()), (f"{NAMESPACE}/contradicting", contradicting())]))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
            {"router", "projection"} <= _letters(cluster, name) for name in ("oversized", "contradicting")):
        time.sleep(0.5)
    assert _letters(cluster, "oversized") == {"router", "projection"}
    assert _letters(cluster, "contradicting") == {"router", "projection"}

    assert cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"] == []
    assert cluster.koord_json("get", "decisions")["items"] == []
