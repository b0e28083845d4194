"""A real kube-apiserver and etcd for the bridge tests (``streams.kube.controlplane``).

Without Go the tests skip with the reason, unless ``KOORD_REQUIRE_KUBE`` is set: then they fail.
"""

from __future__ import annotations

import os
import shutil

import pytest

from streams.kube.controlplane import ControlPlane


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    if not shutil.which("go"):
        reason = "the local control plane is built with Go, which is not on PATH"
        if os.environ.get("KOORD_REQUIRE_KUBE"):
            pytest.fail(reason + "; KOORD_REQUIRE_KUBE is set, so this is a failure, not a skip")
        pytest.skip(reason)
    plane = ControlPlane(tmp_path_factory.mktemp("kube"))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
