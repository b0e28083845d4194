"""``koord get``, ``top`` and ``explain`` on a read model holding a row that cannot be shown, with the broker
gone: every view still answers, marks the row broken and warns on stderr; none prints a traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import update

from state.db import SCHEMA_VERSION, create_all, open_database, sqlite_url
from state.models import SchemaVersion
from state.projection import Projector
from streams.broker.embedded import free_loopback_port
from tests.state.conftest import Records


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """A read model with a pod and a node whose manifests are not JSON beside sound ones, and a broker
    address nothing listens on."""
    url = sqlite_url(tmp_path / "readmodel.sqlite")
    engine = open_database(url)
    create_all(engine)
    bad_pod, bad_node = Records.pod("bad", 2), Records.node("node-b", 4)
    Projector(engine).apply([
        Records.node("node-a", 1),
        dataclasses.replace(bad_pod, value={**bad_pod.value, "manifest": "{not json"}),
        Records.pod("good", 3),
        dataclasses.replace(bad_node, value={**bad_node.value, "manifest": "<xml/>"}),
        _scored(Records.decision("d-1", "default/good", "Scheduled", 5, node_name="node-a")),
        Records.decision("d-2", "default/bad", "Scheduled", 6, node_name="node-a"),
    ])
    engine.dispose()
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}, "KOORD_HOME": str(tmp_path),
            "KOORD_DATABASE_URL": url, "KOORD_BROKER": f"127.0.0.1:{free_loopback_port()}"}


def _scored(decision):
    """``decision`` with the top scores a cycle gives, each plugin's weighted part beside the total."""
    return dataclasses.replace(decision, value={**decision.value, "scores": [
        {"node": "node-a", "score": 180, "plugins": {"NodeResourcesFit": 80, "InterPodAffinity": 100}},
        {"node": "node-b", "score": 60, "plugins": {"NodeResourcesFit": 60}}]})


def koord(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True, env=env,
                            timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    return result


def test_get_pods_shows_a_pod_whose_manifest_is_not_json_as_broken(env):
    result = koord(env, "get", "pods", "-o", "wide")

    rows = {line.split()[1]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows["good"][2:4] == ["Pending", "node-a"]
    assert rows["bad"][2:5] == ["Broken", "<none>", "Broken"]
    assert " ".join(rows["bad"][5:]).startswith("stored manifest is not JSON")
    assert "warning: pods default/bad is broken in the read model: stored manifest is not JSON" in result.stderr
    assert f"warning: the broker at {env['KOORD_BROKER']} is unreachable" in result.stderr


def test_every_format_and_view_answers(env):
    items = json.loads(koord(env, "get", "pods", "-o", "json").stdout)["items"]
    assert [item["metadata"]["name"] for item in items] == ["bad", "good"]
    assert "koordstream.io/broken" in items[0]["metadata"]["annotations"]
    assert "node-b" in koord(env, "get", "nodes").stdout
    assert "node-b (broken)" in koord(env, "top", "nodes", "--once").stdout
    assert "bad" in koord(env, "top", "pods", "--once").stdout
    assert "Latest decision: Scheduled on node-a" in koord(env, "explain", "pod", "bad").stdout
    assert "Node node-b" in koord(env, "explain", "node", "node-b").stdout


def test_a_read_model_of_another_schema_version_is_an_error_message(env):
    engine = open_database(env["KOORD_DATABASE_URL"])
    with engine.begin() as connection:
        connection.execute(update(SchemaVersion).values(version=SCHEMA_VERSION - 1))
    engine.dispose()

    result = subprocess.run([sys.executable, "-m", "streams.cli", "get", "pods"], capture_output=True, text=True,
                            env=env, timeout=60)

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"has schema version {SCHEMA_VERSION - 1}" in result.stderr


def test_explain_pod_shows_each_score_plugins_part_of_the_top_nodes(env):
    shown = koord(env, "explain", "pod", "good").stdout
    assert "top scores: node-a=180, node-b=60" in shown
    assert "node-a: InterPodAffinity 100, NodeResourcesFit 80" in shown
    assert "node-b: NodeResourcesFit 60" in shown
