"""PodGroup, PodMigrationJob and the storage kinds through the bridge and through ``koord apply``: one conversion
path.

Each fixture is created in a real API server and watched by ``koord bridge`` (observe mode), and applied
with ``koord apply``. The bridge's record equals, byte for byte, what ``koord apply`` makes of the object as
the API server returns it; and its typed fields, labels, annotations and spec equal those ``koord apply``
makes of the fixture itself (the API server only adds uid, resourceVersion, creationTimestamp, generation).
The projection holds both kinds' latest state.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as HttpClient, ConnectionParams

from state import queries
from state.db import open_database
from streams import supervision
from streams.replay.reader import read_topic
from streams.routing import ACK_HEADER
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.crash_support import CrashCluster
from tests.streams.bridge.test_bridge_kube import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "kinds"
CASES = {
    "podgroup.yaml": ("/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups", "podgroups",
                      "default/gang-trainer"),
    "podmigrationjob.yaml": ("/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs", "podmigrationjobs",
                             "migrate-web-1"),
    "storageclass.yaml": ("/apis/storage.k8s.io/v1/storageclasses", "storageclasses", "zonal-ssd"),
    "persistentvolume.yaml": ("/api/v1/persistentvolumes", "persistentvolumes", "local-disk-node-a"),
    "persistentvolumeclaim.yaml": ("/api/v1/namespaces/default/persistentvolumeclaims", "persistentvolumeclaims",
                                   "default/data-web-0"),
    "csinode.yaml": ("/apis/storage.k8s.io/v1/csinodes", "csinodes", "node-a"),
}
SCHEMAS = {"podgroups": "PodGroup", "podmigrationjobs": "PodMigrationJob", "storageclasses": "StorageClass",
           "persistentvolumes": "PersistentVolume", "persistentvolumeclaims": "PersistentVolumeClaim",
           "csinodes": "CSINode"}


@pytest.fixture(scope="module")
def running(plane, tmp_path_factory):
    home = tmp_path_factory.mktemp("bridge-kinds")
    plane.install(ROOT / "deploy" / "crds")
    admin = HttpClient(KubeConfig.from_file(plane.kubeconfig).get(), ConnectionParams())
    cluster = CrashCluster.start(home, "tansu")
    bridge = None
    try:
        bridge = subprocess.Popen(
            supervision.koord_command("bridge", "--kubeconfig", str(plane.kubeconfig), "--mode", "observe"),
            stdout=open(home / "bridge.log", "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **cluster.env}, process_group=0)
        yield admin, cluster, home
    finally:
        if bridge is not None and bridge.poll() is None:
            bridge.send_signal(signal.SIGTERM)
            bridge.wait(timeout=30)
        cluster.stop()
        admin.close()


def records(bootstrap: str, topic_id: str, key: str) -> list[tuple[bool, bytes]]:
    """(produced by koord apply, value) of every record of ``key``, in order."""
    found = asyncio.run(read_topic(bootstrap, load_topology().name(topic_id)))
    return [(any(name == ACK_HEADER for name, _ in r.headers), r.value) for r in found if r.key.decode() == key]


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_the_bridge_and_koord_apply_make_the_same_record(running, fixture):
    admin, cluster, home = running
    path, topic_id, key = CASES[fixture]
    text = (FIXTURES / fixture).read_text()
    response = admin.post(path, json=yaml.safe_load(text))
    assert response.status_code == 201, response.text
    bridged = wait_for(lambda: [v for by_apply, v in records(cluster.bootstrap, topic_id, key) if not by_apply],
                       f"the bridge's record of {key} on {topic_id}")
    assert len(bridged) == 1

    served = response.json()
    served["metadata"].pop("managedFields", None)
    for document in (text, json.dumps(served)):
        applied = cluster.koord("apply", "-f", "-", input=document)
        assert applied.returncode == 0, applied.stderr
    from_fixture, from_server = [v for by_apply, v in records(cluster.bootstrap, topic_id, key) if by_apply]
    assert from_server == bridged[0], "koord apply of the served object differs from the bridge's record"

    schema, bridge_record = codec.decode(bridged[0])
    _, fixture_record = codec.decode(from_fixture)
    typed = [field for field in bridge_record if field not in ("metadata", "manifest")]
    assert {f: bridge_record[f] for f in typed} == {f: fixture_record[f] for f in typed}
    for field in ("name", "namespace", "labels", "annotations"):
        assert bridge_record["metadata"][field] == fixture_record["metadata"][field]
    assert json.loads(bridge_record["manifest"]).get("spec") == json.loads(fixture_record["manifest"]).get("spec")
    assert schema == SCHEMAS[topic_id]

    engine = open_database(cluster.env["KOORD_DATABASE_URL"])
    wait_for(lambda: queries.object_progress(engine, topic_id, key), f"the read model to hold {key}")
    assert "Traceback" not in (home / "bridge.log").read_text(errors="replace")
