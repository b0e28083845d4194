"""A source record at the size limit goes all the way through: applied, forwarded inside its InboxEvent,
scheduled and in the read model (the review found a 1,010,000-byte pod applied and then lost)."""

from __future__ import annotations

import pytest

from streams import limits
from streams.objects import load_and_validate
from streams.routing import ACK_HEADERS
from streams.schemas import codec

pytestmark = pytest.mark.integration

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: size-limit-node}
spec:
  taints: [{key: koordstream.io/e2e, value: size-limit, effect: NoSchedule}]
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
"""


def pod_yaml(hostname_bytes: int) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: at-the-limit, namespace: size-limit}}
spec:
  hostname: {"h" * hostname_bytes}
  tolerations: [{{key: koordstream.io/e2e, operator: Equal, value: size-limit, effect: NoSchedule}}]
  containers: [{{name: main, image: nginx, resources: {{requests: {{cpu: "1", memory: 256Mi}}}}}}]
"""


def record_size(hostname_bytes: int) -> int:
    [record] = load_and_validate("-", stdin_text=pod_yaml(hostname_bytes))
    return limits.record_size(record.key, codec.encode(record.schema, record.record), ACK_HEADERS)


def test_a_pod_at_the_record_limit_is_scheduled_and_in_the_read_model(cluster):
    hostname = 1_000_000 + limits.RECORD_MAX_BYTES - record_size(1_000_000)
    assert record_size(hostname) == limits.RECORD_MAX_BYTES

    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "90", input=NODE + "---\n" + pod_yaml(hostname))

    [pod] = cluster.koord_json("get", "pods", "-n", "size-limit")["items"]
    assert pod["spec"]["nodeName"] == "size-limit-node"
    assert len(pod["spec"]["hostname"]) == hostname
    assert not [d for d in cluster.koord_json("get", "deadletters")["items"] if "size-limit" in (d["key"] or "")]
