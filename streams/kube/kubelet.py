"""kubelet built from the Go module proxy, cached like kube-apiserver (``streams.kube.controlplane``).

``k8s.io/kubernetes/cmd/kubelet`` at :data:`~streams.kube.controlplane.KUBERNETES_VERSION`, through the same
wrapper module that maps each staging ``replace`` to the published ``v0.<minor>.<patch>``; built with
``CGO_ENABLED=0`` as the release builds kubelet, sharing Go's module and build caches with kube-apiserver.
The binary lands in ``~/.cache/koordstream/k8s-kubelet/<version>/kubelet``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from streams import cache
from streams.kube.controlplane import KUBERNETES_VERSION, MissingPrerequisite


def binary() -> Path:
    """The path of ``kubelet``, built with Go on first use."""
    go = shutil.which("go")
    if not go:
        raise MissingPrerequisite("kubelet is built from source and needs Go on PATH "
                                  "(Debian: apt-get install golang; Go 1.24 or newer)")
    return cache.build_once(f"k8s-kubelet/{KUBERNETES_VERSION}", lambda folder: _build(go, folder)) / "kubelet"


def _build(go: str, folder: Path) -> None:
    env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}

    def run(args: list[str], cwd: Path) -> str:
        result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
        return result.stdout

    with tempfile.TemporaryDirectory(prefix="koord-kubelet-build-") as tmp:
        module = Path(tmp)
        staging = f"v0.{KUBERNETES_VERSION.removeprefix('v1.')}"
        upstream = json.loads(run([go, "mod", "download", "-json", f"k8s.io/kubernetes@{KUBERNETES_VERSION}"],
                                  module))["GoMod"]
        replaces = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", Path(upstream).read_text(), re.MULTILINE)
        (module / "go.mod").write_text("module local/kubelet\n\ngo 1.24.0\n\n" + "".join(
            f"replace {name} => {name} {staging}\n" for name in replaces))
        run([go, "get", f"k8s.io/kubernetes/cmd/kubelet@{KUBERNETES_VERSION}"], module)
        version = f"-X k8s.io/component-base/version.gitVersion={KUBERNETES_VERSION}"
        run([go, "build", "-trimpath", "-ldflags", f"-s -w {version}", "-o", str(folder / "kubelet"),
             "k8s.io/kubernetes/cmd/kubelet"], module)
