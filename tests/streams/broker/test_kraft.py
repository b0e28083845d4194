"""The local Kafka's prerequisites, jar cache and node configuration, without starting a JVM."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streams.broker import kraft
from streams.maven import MissingPrerequisite


def test_missing_java_and_maven_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingPrerequisite, match=r"needs Java 17 \(java\) and Maven \(mvn\) on PATH"):
        kraft.check_prerequisites()


def test_an_old_java_is_refused(monkeypatch, tmp_path):
    for name, script in (("java", 'echo \'openjdk version "11.0.2"\' >&2'), ("mvn", "true")):
        (tmp_path / name).write_text(f"#!/bin/sh\n{script}\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingPrerequisite, match="needs Java 17 or newer"):
        kraft.check_prerequisites()


def test_koord_up_kafka_without_java_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}
    env.update(PATH=str(tmp_path), KOORD_HOME=str(tmp_path / "home"))
    result = subprocess.run([sys.executable, "-m", "streams.cli", "up", "--broker", "kafka", "--nodes", "0"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1
    assert "Java 17 (java)" in result.stderr and "Traceback" not in result.stderr


def test_the_cache_is_reused_without_maven(monkeypatch, tmp_path):
    """A completed cache answers without running mvn (which would fail here: it is not on PATH)."""
    home = tmp_path / f"kafka-{kraft.KAFKA_VERSION}"
    (home / "libs").mkdir(parents=True)
    (home / ".complete").touch()
    monkeypatch.setenv("KOORD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kraft, "check_prerequisites", lambda: ("java", "mvn-absent"))
    assert kraft.kafka_libs() == home / "libs"


def test_three_nodes_share_one_static_quorum(tmp_path):
    nodes = [kraft.KafkaNode(i, 9000 + i, 9100 + i, tmp_path / f"kafka-{i}") for i in (1, 2, 3)]
    cluster = kraft.KafkaCluster(nodes, tmp_path / "libs")
    properties = dict(line.split("=", 1) for line in cluster._properties(nodes[1]).splitlines())
    assert properties["controller.quorum.voters"] == "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102"
    assert properties["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9002"
    assert properties["node.id"] == "2"
    assert (properties["default.replication.factor"], properties["min.insync.replicas"]) == ("3", "2")
    assert properties["transaction.state.log.min.isr"] == "2"
    assert Path(properties["log.dirs"]) == tmp_path / "kafka-2" / "data"


def test_a_single_node_has_replication_one():
    cluster = kraft.KafkaCluster([kraft.KafkaNode(1, 1, 2, Path("/x"))], Path("/libs"))
    properties = dict(line.split("=", 1) for line in cluster._properties(cluster.nodes[0]).splitlines())
    assert (properties["offsets.topic.replication.factor"], properties["min.insync.replicas"]) == ("1", "1")


def test_free_ports_are_distinct():
    ports = kraft.free_ports(6)
    assert len(set(ports)) == 6
