"""What every command needs: settings, the broker address, the topology, the read model."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from streams.settings import Settings
from streams.topology import Topology, load_topology

if TYPE_CHECKING:
    from sqlalchemy import Engine

STATE_FILE = "up.json"
STATE_RESERVE_BYTES = 16384
"""Space the state file of ``koord up`` keeps (its JSON padded with spaces), so that the supervisor can
still record what happens, a full KOORD_HOME included, by writing in place."""
STATE_READ_ATTEMPTS = 5


def settings() -> Settings:
    return Settings.from_env()


def up_state(home: Path) -> dict | None:
    """The state ``koord up`` records, or None; read again when caught in the middle of an update."""
    path = home / STATE_FILE
    for attempt in range(STATE_READ_ATTEMPTS):
        try:
            return json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError:
            if attempt == STATE_READ_ATTEMPTS - 1:
                raise
            time.sleep(0.05)
    return None


def write_up_state(path: Path, state: dict) -> None:
    """Write the state in place, within the space it reserved (:data:`STATE_RESERVE_BYTES`)."""
    data = json.dumps(state, indent=2).encode().ljust(STATE_RESERVE_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


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
    """The read model, its tables created or checked; a SQLite file that cannot be opened is an error
    message naming the file and, when its folder cannot be written, the OS error. (SQLAlchemy is imported
    here: the commands without a read model, the worker first, start without it.)"""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    from state.db import create_all, open_database

    config = config or settings()
    url = make_url(config.resolved_database_url)
    try:
        engine = open_database(url)
        create_all(engine)
    except OperationalError as error:
        if url.get_backend_name() != "sqlite" or not url.database:
            raise
        path = Path(url.database)
        problem = write_problem(path.parent)
        raise click.ClickException(f"cannot open the read model {path}: {error.orig}"
                                   + (f" ({path.parent}: {problem.strerror})" if problem else "")) from None
    return engine


def write_problem(directory: Path) -> OSError | None:
    """Why a file cannot be written in ``directory`` (created if missing): a read-only or full file system,
    no permission; None when a small file can be written there."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".koord-probe-")
        try:
            os.write(fd, b"koord")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as error:
        return error
    return None


def writable_home(config: Settings) -> Path:
    """KOORD_HOME, created; an error message naming it and the OS error when a file cannot be written in it."""
    problem = write_problem(config.home)
    if problem:
        raise click.ClickException(f"cannot write to KOORD_HOME {config.home.resolve()}: {problem.strerror}")
    return config.home
