"""What every command needs: settings, the broker address, the topology, the read model."""

from __future__ import annotations

import json
from pathlib import Path

import click
from sqlalchemy import Engine

from state.db import create_all, open_database
from streams.settings import Settings
from streams.topology import Topology, load_topology

STATE_FILE = "up.json"


def settings() -> Settings:
    return Settings.from_env()


def up_state(home: Path) -> dict | None:
    path = home / STATE_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text())


def bootstrap(config: Settings | None = None) -> str:
    """KOORD_BROKER, else the embedded broker recorded by ``koord up``."""
    config = config or settings()
    if config.broker:
        return config.broker
    state = up_state(config.home)
    if state and state.get("bootstrap"):
        return state["bootstrap"]
    raise click.ClickException(
        f"no broker: set KOORD_BROKER, or start the embedded one with `koord up --detach` "
        f"(looked for {config.home / STATE_FILE})")


def topology(config: Settings | None = None) -> Topology:
    config = config or settings()
    return load_topology(config.topology_file, config.environment)


def read_model(config: Settings | None = None) -> Engine:
    config = config or settings()
    engine = open_database(config.resolved_database_url)
    create_all(engine)
    return engine
