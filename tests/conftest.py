"""Shared fixtures: the repository root on sys.path for ``tests.*`` helpers; the broker kind; a control plane."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from hypothesis import settings as hypothesis_settings  # noqa: E402

from streams.broker import local  # noqa: E402  (needs the repository root on sys.path)
from tests.brokers import require_kafka  # noqa: E402

# Property tests draw the same examples on every run and keep no example database.
hypothesis_settings.register_profile("koordstream", derandomize=True, database=None, deadline=None,
                                     max_examples=150, print_blob=True)
hypothesis_settings.load_profile("koordstream")


def pytest_collection_modifyitems(config, items):
    """A ``scenario`` test (a feature of the decision core, broker-agnostic) runs in the Tansu round only: the
    Kafka round keeps what depends on the broker (delivery, transactions, compaction, crash and failover,
    replay, the read model, ``koord up``)."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_kafka = callspec is not None and callspec.params.get("broker_kind") == "kafka"
        (dropped if on_kafka and item.get_closest_marker("scenario") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs the suite on two processes (``-n 2``): the tests of one module on one broker kind
    stay on one process, so module fixtures (a broker, a crash cluster, a control plane) start once there.
    They are handed out in collection order, where the broker tests (the long ones) come first: the short
    ones fill the end."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ByModuleAndBroker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module, _, name = nodeid.partition("::")
            params = name.partition("[")[2].rstrip("]").split("-")
            return module + "".join(f"[{kind}]" for kind in local.KINDS if kind in params)

    return ByModuleAndBroker(config, log)


@pytest.fixture(scope="session", params=local.KINDS)
def broker_kind(request) -> str:
    """``tansu`` or ``kafka``: the broker every test that uses it runs on, one round per kind (pytest
    runs every test of one kind before it starts the other; ``scenario`` tests run in the Tansu round only)."""
    if request.param == "kafka":
        require_kafka()
    return request.param


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    """A real kube-apiserver and etcd (``streams.kube.controlplane``) for one test module. Without Go
    the tests skip with the reason, unless ``KOORD_REQUIRE_KUBE`` is set (``make test``): then they fail."""
    import os
    import shutil

    from streams.kube.controlplane import ControlPlane

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
