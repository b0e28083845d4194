"""A Node's ``status.images`` from a real kube-apiserver through the bridge's conversion, bounded as the kubelet
bounds it, then read by ImageLocality: the pod lands on the node holding its image."""

from __future__ import annotations

import pytest
from lightkube import Client, KubeConfig
from lightkube.models.core_v1 import ContainerImage, NodeStatus
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node

from streams.bridge.convert import to_object_record
from streams.bridge.resources import WATCHED
from streams.objects.kinds.node import MAX_IMAGES, MAX_NAMES_PER_IMAGE
from tests.streams.scheduler.support import decisions, event, k8s_pod, run

pytestmark = pytest.mark.integration

NODES = next(resource for resource in WATCHED if resource.kind == "Node")
MB = 1 << 20


def served(client: Client, name: str, images: list[ContainerImage]) -> dict:
    """The Node as the API server serves it to a list or watch (``to_dict`` of what lightkube read back)."""
    client.create(Node(metadata=ObjectMeta(name=name),
                       status=NodeStatus(allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"},
                                         capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}, images=images)))
    return client.get(Node, name).to_dict()


def test_images_come_through_the_bridge_bounded_and_are_scored(plane):
    client = Client(KubeConfig.from_file(plane.kubeconfig))
    many = [ContainerImage(names=[f"registry.example/app-{i}:v{j}" for j in range(8)], sizeBytes=i * MB)
            for i in range(1, 301)]
    record = to_object_record(NODES, served(client, "img-many", many)).record
    assert len(record["images"]) == MAX_IMAGES
    assert record["images"][0] == {"names": [f"registry.example/app-300:v{j}" for j in range(MAX_NAMES_PER_IMAGE)],
                                   "sizeBytes": 300 * MB}

    plain = to_object_record(NODES, served(client, "img-none", [])).record
    assert plain["images"] == []
    _, out = run(event("Node", "img-none", plain), event("Node", "img-many", record),
                 k8s_pod("web", containers=[{"name": "c", "image": "registry.example/app-300:v1"}]))
    (decision,) = decisions(out)
    totals = {score["node"]: score["score"] for score in decision["scores"]}
    assert decision["nodeName"] == "img-many" and totals["img-many"] - totals["img-none"] == 12, (
        "300 MiB on one node of two: 100 * (150 MiB - 23 MiB) // (1000 MiB - 23 MiB)")
