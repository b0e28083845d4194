"""The read model on a real broker of each kind: hostile records never stop the projection nor appear as
objects, and a new broker on the same KOORD_HOME gets a clean read model, the old one kept apart."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from state.db import open_database
from state.incarnation import recorded
from streams import kafka, supervision
from streams.broker import embedded, local
from streams.objects import load_and_validate
from streams.schemas import codec
from streams.topology import load_topology

pytestmark = pytest.mark.integration

POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers: [{{name: main, image: nginx, resources: {{requests: {{cpu: 500m}}}}}}]
"""


def pod_value(name: str, cpu: int | None = None) -> bytes:
    [record] = load_and_validate("-", stdin_text=POD.format(name=name))
    value = copy.deepcopy(record.record)
    if cpu is not None:
        value["requests"]["cpu"] = cpu
    return codec.encode("Pod", value)


def koord(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True, env=env,
                            timeout=180)
    if check and result.returncode != 0:
        raise AssertionError(f"koord {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    assert "Traceback" not in result.stderr, result.stderr
    return result


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout}s")


async def send_raw(bootstrap: str, records: list[tuple[str, bytes, bytes]]) -> None:
    async with kafka.producer(bootstrap) as producer:
        for topic, key, value in records:
            await (await producer.send(topic, key=key, value=value))


def metric(port: int, name: str, **labels: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_hostile_records_are_dead_lettered_and_the_next_pod_is_projected(tmp_path, broker_kind):
    home = tmp_path / "home"
    broker = local.start(broker_kind, home, load_topology())
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, **broker.env(),
           "KOORD_HOME": str(home), "KOORD_DATABASE_URL": f"sqlite:///{home / 'readmodel.sqlite'}"}
    port = embedded.free_loopback_port()
    projection = supervision.spawn(supervision.koord_command("project", "--metrics-port", str(port)),
                                   home / "projection.log", env)
    try:
        asyncio.run(send_raw(broker.bootstrap, [
            ("koord.pods", b"default/\xff\xfe", pod_value("web")),
            ("koord.pods", b"default/bad", pod_value("bad", cpu=-500)),
            ("koord.pods", b"default/someone-else", pod_value("forged")),
            ("koord.pods", b"default/garbage", b"\xc3\x01not avro"),
            ("koord.pods", b"default/next", pod_value("next")),
        ]))

        def projected():
            letters = [d for d in json.loads(koord(env, "get", "deadletters", "-o", "json").stdout)["items"]
                       if d["stage"] == "projection"]
            pods = json.loads(koord(env, "get", "pods", "-o", "json").stdout)["items"]
            return (letters, pods) if len(letters) == 4 and pods else None

        letters, pods = wait_for(projected, 90, "four projection dead letters and the valid pod")
        assert projection.poll() is None, (home / "projection.log").read_text()[-3000:]
        assert [pod["metadata"]["name"] for pod in pods] == ["next"]
        reasons = {letter["key"]: letter["reason"] for letter in letters}
        assert "key is not UTF-8" in reasons["default/\\xff\\xfe"]
        assert "quantity must not be negative" in reasons["default/bad"]
        assert "does not name the object" in reasons["default/someone-else"]
        assert reasons["default/garbage"].startswith("undecodable record")
        assert metric(port, "koord_dead_letters_total", stage="projection", topic="koord.pods") == 4
    finally:
        supervision.stop([projection])
        broker.stop()


def up_env(home: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, "KOORD_HOME": str(home)}


def placed_pods(env: dict[str, str]) -> list[dict]:
    pods = json.loads(koord(env, "get", "pods", "-o", "json").stdout)["items"]
    return [pod for pod in pods if pod["spec"].get("nodeName")]


def test_a_new_broker_on_the_same_home_gets_a_clean_read_model(tmp_path, broker_kind):
    """Restarting the embedded broker used to leave new decisions colliding with the old read model's rows:
    no new pod ever showed a node, while `koord get` showed the old cluster without a warning."""
    home = tmp_path / "home"
    env = up_env(home)
    koord(env, "up", "--detach", "--nodes", "2", "--broker", broker_kind)
    try:
        wait_for(lambda: placed_pods(env), 120, "the first cluster placed no pod")
        old_cluster = recorded(engine := open_database(f"sqlite:///{home / 'readmodel.sqlite'}")).incarnation
        engine.dispose()
    finally:
        koord(env, "down", check=False)
    gone = koord(env, "get", "pods")
    assert "warning: this read model is of cluster" in gone.stderr and "may be stale" in gone.stderr
    if broker_kind == "kafka":
        shutil.rmtree(home / "kafka")

    started = koord(env, "up", "--detach", "--nodes", "2", "--broker", broker_kind)
    try:
        assert "the embedded broker of this KOORD_HOME is gone; starting a clean read model, the old one is kept at" \
            in started.stdout
        [kept] = [path for path in home.glob("readmodel.*.sqlite")]
        assert old_cluster.cluster_id.replace(":", "_") in kept.name
        placed = wait_for(lambda: placed_pods(env), 120, "the new cluster placed no pod")
        assert placed
        new = open_database(f"sqlite:///{home / 'readmodel.sqlite'}")
        assert recorded(new).incarnation != old_cluster
        new.dispose()
        live = koord(env, "get", "pods")
        assert "warning" not in live.stderr, live.stderr
        old = koord({**env, "KOORD_DATABASE_URL": f"sqlite:///{kept}"}, "get", "pods")
        assert f"warning: this read model is of cluster {old_cluster.cluster_id}" in old.stderr
        assert "which is not the broker at" in old.stderr
    finally:
        koord(env, "down", check=False)
