"""ImageLocality under kube-scheduler v1.34's ``TestImageLocalityPriority`` and ``TestNormalizedImageName``
cases: nodes applied with their ``status.images``, the pod's containers with their images."""

import numpy as np
import pytest

from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.imagelocality import NAME, normalized_image_name
from tests.streams.scheduler.support import (
    converted, decisions, deleted, k8s_pod, node_scores, plugin_of, pod_info, run)

MB = 1024 * 1024

NODE_40_300_2000 = [(["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
                    (["gcr.io/300:latest", "gcr.io/300:v1"], 300), (["gcr.io/2000:latest"], 2000)]
NODE_250_10 = [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)]
NODE_600_40_900 = [(["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)]
NODE_300_600_900 = [(["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)]
NODE_20_30_40 = [(["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)]
NO_IMAGES: list = []


def image_node(name: str, images: list, ts: int = 1000):
    """A Node as ``koord apply`` records it, with ``status.images`` of (names, size in MiB)."""
    return converted({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                 "images": [{"names": names, "sizeBytes": size * MB} for names, size in images]}},
                     ts=ts)


def image_pod(name: str, *images: str, init: tuple[str, ...] = (), node_name: str | None = None):
    return k8s_pod(name, node_name=node_name,
                   containers=[{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
                   init_containers=[{"name": f"i{i}", "image": image} for i, image in enumerate(init)] or None)


def scores(pod, *nodes) -> dict[str, int]:
    domain, _ = run(*(image_node(f"node{i + 1}", images) for i, images in enumerate(nodes)))
    got = node_scores(plugin_of(domain, NAME), CycleState(), pod_info(pod), np.ones(len(nodes), dtype=bool))
    return dict(zip(domain.cluster.columns.names, got))


@pytest.mark.parametrize("pod, nodes, expected", [
    pytest.param(image_pod("p", "gcr.io/40", "gcr.io/250"), (NODE_40_300_2000, NODE_250_10), (0, 5),
                 id="two images spread on two nodes, prefer the larger image one"),
    pytest.param(image_pod("p", "gcr.io/40", "gcr.io/300"), (NODE_40_300_2000, NODE_250_10), (7, 0),
                 id="two images on one node, prefer this node"),
    pytest.param(image_pod("p", "gcr.io/10", "gcr.io/4000"), (NODE_4000_30, NODE_250_10), (100, 0),
                 id="if exceed limit, use limit"),
    pytest.param(image_pod("p", "gcr.io/10", "gcr.io/4000"), (NODE_4000_30, NODE_250_10, NO_IMAGES), (66, 0, 0),
                 id="if exceed limit, use limit (with node which has no images present)"),
    pytest.param(image_pod("p", "gcr.io/300", "gcr.io/600", "gcr.io/900"),
                 (NODE_600_40_900, NODE_300_600_900, NO_IMAGES), (32, 36, 0), id="pod with multiple large images, node2 is preferred"),
    pytest.param(image_pod("p", "gcr.io/30", "gcr.io/40"), (NODE_20_30_40, NODE_4000_30), (1, 0),
                 id="pod with multiple small images"),
    pytest.param(image_pod("p", "gcr.io/30", init=("gcr.io/300",)), (NODE_40_300_2000, NODE_20_30_40), (6, 0),
                 id="include InitContainers: two images spread on two nodes, prefer the larger image one"),
])
def test_TestImageLocalityPriority(pod, nodes, expected):
    assert scores(pod, *nodes) == {f"node{i + 1}": score for i, score in enumerate(expected)}


DIGEST = "sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2"
"""sha256("root"), the Go test's ``getImageFakeDigest("root")``."""


@pytest.mark.parametrize("name, normalized", [
    pytest.param("root", "root:latest", id="add :latest postfix 1"),
    pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
    pytest.param("root:tag", "root:tag", id="keep it as is 1"),
    pytest.param("root@" + DIGEST, "root@" + DIGEST, id="keep it as is 2"),
])
def test_TestNormalizedImageName(name, normalized):
    assert normalized_image_name(name) == normalized


def test_implicit_registry_is_not_added():
    """kube-scheduler matches names as written plus ":latest": "nginx" is not the node's
    "docker.io/library/nginx:latest" (the TODO of ``normalizedImageName``)."""
    assert scores(image_pod("p", "nginx"), [(["docker.io/library/nginx:latest"], 900)]) == {"node1": 0}
    assert scores(image_pod("p", "nginx"), [(["nginx:latest"], 900)]) == {"node1": 89}


def test_a_pod_lands_where_its_image_is_in_the_default_profile():
    """500 MiB on one node of two: 100 * (250 MiB - 23 MiB) // (1000 MiB - 23 MiB) = 23, weight 1; the two nodes
    are otherwise alike, so their totals differ by that."""
    _, out = run(image_node("a", NO_IMAGES), image_node("b", [(["registry.example/app:v1"], 500)]),
                 image_pod("p", "registry.example/app:v1"))
    (decision,) = decisions(out)
    assert decision["nodeName"] == "b"
    totals = {s["node"]: s["score"] for s in decision["scores"]}
    assert totals["b"] - totals["a"] == 23


def test_spread_follows_node_changes():
    """The image's spread counts the nodes holding it now: an update that drops the image, or a node deleted,
    changes every other holder's score."""
    big = [(["gcr.io/900:latest"], 900)]
    domain, _ = run(image_node("n1", big), image_node("n2", big), image_node("n3", NO_IMAGES))
    plugin, info = plugin_of(domain, NAME), pod_info(image_pod("p", "gcr.io/900"))
    assert plugin.score(CycleState(), info, np.ones(3, dtype=bool)).tolist() == [59, 59, 0]
    run(image_node("n2", NO_IMAGES, ts=2000), domain=domain)
    assert plugin.score(CycleState(), info, np.ones(3, dtype=bool)).tolist() == [28, 0, 0]
    run(deleted("Node", "n2", ts=3000), domain=domain)
    row = domain.cluster.columns.row["n1"]
    assert plugin.score(CycleState(), info, np.ones(2, dtype=bool))[row] == 43


def test_a_pod_without_known_images_scores_zero():
    domain, _ = run(image_node("n1", NODE_250_10))
    info = pod_info(image_pod("p", "gcr.io/unknown"))
    assert node_scores(plugin_of(domain, NAME), CycleState(), info, np.ones(1, dtype=bool)) == [0]


def test_a_restored_domain_scores_the_same():
    """The stored node keeps its images: a domain restored from its entries scores as the live one."""
    from streams.scheduler.domain import SchedulingDomain

    live, _ = run(image_node("node1", NODE_600_40_900), image_node("node2", NODE_300_600_900),
                  image_node("node3", NO_IMAGES))
    restored = SchedulingDomain.restore("default", live.entries())
    info = pod_info(image_pod("p", "gcr.io/300", "gcr.io/600", "gcr.io/900"))
    got = [dict(zip(domain.cluster.columns.names,
                    node_scores(plugin_of(domain, NAME), CycleState(), info, np.ones(3, dtype=bool))))
           for domain in (live, restored)]
    assert got == [{"node1": 32, "node2": 36, "node3": 0}] * 2
