"""ImageLocality: prefer the nodes that already hold the pod's container images (kube-scheduler v1.34
``imagelocality/image_locality.go``).

Score, per node, over the images of the pod's init containers and containers (``n`` containers in all), each
name normalized by appending ":latest" when it has no tag (``normalizedImageName``: "nginx" -> "nginx:latest";
kube-scheduler adds no registry, so "nginx" does not match a node's "docker.io/library/nginx:latest")::

    spread  = nodes holding the image / all nodes
    sum     = Σ over the pod's images the node holds of int(size * spread)
    max     = 1000 MiB * n
    score   = 100 * (clamp(sum, 23 MiB, max) - 23 MiB) // (max - 23 MiB)

A node's images are its Node's ``status.images`` names (bounded: ``objects.kinds.node.MAX_IMAGES``). The size of
an image is the one its node reports; kube-scheduler's cache keeps the size of whichever node reported the name
first, which differs only for one name at different sizes on different nodes, and would make the score depend
on the order nodes arrived (and so on a restore).

A pod none of whose images any node holds scores 0 everywhere after one dictionary lookup per container.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import MAX_NODE_SCORE, CycleState, register
from streams.scheduler.state import Cluster, NodeChanged, NodeObject

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
"""kube-scheduler's bounds of the summed image sizes: the size range of most images in registries."""


@dataclasses.dataclass(frozen=True)
class ImageLocalityArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "ImageLocalityArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


def normalized_image_name(name: str) -> str:
    """``name`` with ":latest" appended when it has no tag after its last "/" (``normalizedImageName``)."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def calculate_priority(sum_scores: np.ndarray, containers: int) -> np.ndarray:
    """The score of each node from its summed image scores (``calculatePriority``)."""
    high = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.minimum(np.maximum(sum_scores, MIN_THRESHOLD), high)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (high - MIN_THRESHOLD)


def node_images(node: NodeObject) -> dict[str, int]:
    """Image name -> size on ``node``; a name listed twice keeps its first size (``addNodeImageStates``)."""
    out: dict[str, int] = {}
    for names, size in node.images:
        for name in names:
            out.setdefault(name, size)
    return out


class ImageLocality:
    name = NAME
    Args = ImageLocalityArgs
    events_to_register = register()

    def __init__(self, args: ImageLocalityArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._holders: dict[str, dict[str, int]] = {}
        """Image name -> {node name: size} of the nodes holding it."""
        self._version = 0
        self._rows: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        """Image name -> (version, rows, sizes), rebuilt after images changed or rows moved (``_version``)."""
        for name in sorted(cluster.nodes):
            self._add(name, cluster.nodes[name])

    def observe(self, change: object) -> None:
        if isinstance(change, NodeChanged):
            old = change.old.images if change.old is not None else ()
            new = change.new.images if change.new is not None else ()
            if old != new:
                if change.old is not None:
                    self._remove(change.name, change.old)
                if change.new is not None:
                    self._add(change.name, change.new)
            if old != new or change.moved is not None:
                self._version += 1

    def _add(self, name: str, node: NodeObject) -> None:
        for image, size in node_images(node).items():
            self._holders.setdefault(image, {})[name] = size

    def _remove(self, name: str, node: NodeObject) -> None:
        for image in node_images(node):
            holders = self._holders.get(image)
            if holders is not None:
                holders.pop(name, None)
                if not holders:
                    del self._holders[image]

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        count = len(candidates)
        wanted = [image for image in map(normalized_image_name, pod.images) if image in self._holders]
        if not wanted:
            return 0
        total = len(self.cluster.nodes)
        sums = np.zeros(count, dtype=np.int64)
        for image in wanted:
            rows, sizes = self._image_rows(image)
            spread = len(rows) / total
            sums[rows] += (sizes * spread).astype(np.int64)
        return calculate_priority(sums, len(pod.containers) + len(pod.init_containers))

    def _image_rows(self, image: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the nodes holding ``image`` and their sizes (float64, as kube-scheduler scales them)."""
        columns = self.cluster.columns
        cached = self._rows.get(image)
        if cached is None or cached[0] != self._version:
            if len(self._rows) > 2 * len(self._holders) + 64:
                self._rows = {}
            holders = sorted(self._holders[image].items())
            rows = np.fromiter((columns.row[name] for name, _ in holders), dtype=np.int64, count=len(holders))
            sizes = np.fromiter((size for _, size in holders), dtype=np.float64, count=len(holders))
            cached = self._rows[image] = (self._version, rows, sizes)
        return cached[1], cached[2]
