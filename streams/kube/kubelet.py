"""kubelet built from the Go module proxy, cached like kube-apiserver (``streams.kube.controlplane``).

``k8s.io/kubernetes/cmd/kubelet`` at :data:`~streams.kube.controlplane.KUBERNETES_VERSION`, through the same
wrapper module that maps each staging ``replace`` to the published ``v0.<minor>.<patch>``; built with
``CGO_ENABLED=0`` as the release builds kubelet, sharing Go's module and build caches with kube-apiserver.
The binary lands in ``~/.cache/koordstream/k8s-kubelet/<version>/kubelet``.
"""

from __future__ import annotations

from pathlib import Path

from streams import cache
from streams.kube.controlplane import KUBERNETES_VERSION, build_kubernetes, go_command


def binary() -> Path:
    """The path of ``kubelet``, built with Go on first use."""
    go = go_command("kubelet")
    return cache.build_once(f"k8s-kubelet/{KUBERNETES_VERSION}",
                            lambda folder: build_kubernetes(go, folder, ("kubelet",))) / "kubelet"
