"""docker-compose.yml validates against the compose specification (no Docker engine runs here)."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from streams.cli import cli

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"


def check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(path)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def test_compose_file_matches_the_compose_spec():
    result = check(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_invalid_compose_file_is_caught(tmp_path):
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  worker:\n    image: koordstream\n    privilegd: true\n    depends_on: 5\n")
    assert check(broken).returncode != 0


def test_three_kraft_brokers_of_the_official_image(services):
    brokers = {name: svc for name, svc in services.items() if name.startswith("kafka-")}
    assert len(brokers) == 3
    for name, svc in brokers.items():
        assert svc["image"].startswith("apache/kafka:")
        env = svc["environment"]
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].count("@") == 3
        assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"


def test_the_stack_has_every_part(services):
    assert {"postgres", "topics", "worker-1", "worker-2", "projection", "node-agent", "simulator", "prometheus",
            "grafana"} <= set(services)
    agent = services["node-agent"]
    assert agent["privileged"] and "/sys/fs/cgroup:/sys/fs/cgroup" in agent["volumes"]
    assert services["worker-1"]["environment"]["KOORD_ENV"] == "compose"


def test_every_koord_service_runs_an_existing_command(services):
    for name, svc in services.items():
        if svc.get("image") == "koordstream:dev":
            assert cli.get_command(None, svc["command"][0]) is not None, f"{name}: koord {svc['command'][0]}"
