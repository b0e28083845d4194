"""Process-wide settings, read once from the environment.

Every knob a user can turn lives here with its unit and default; the CLI and
the Faust app derive from this one dataclass (Faust's settings file is the
model). Nothing else reads ``os.environ``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Settings:
    broker: str | None = None
    """``KOORD_BROKER``: Kafka bootstrap servers ("host:port[,host:port]").
    Unset means the embedded broker that ``koord up`` starts (its address is
    then read from ``KOORD_HOME/up.json``)."""

    home: Path = Path(".koord")
    """``KOORD_HOME``: where ``koord up`` keeps its state, logs and the SQLite
    read model."""

    database_url: str | None = None
    """``KOORD_DATABASE_URL``: SQLAlchemy URL of the read model. Unset means
    SQLite at ``KOORD_HOME/readmodel.sqlite``."""

    environment: str = "embedded"
    """``KOORD_ENV``: the environment of ``deploy/topics.yaml`` to apply
    (replication factor and per-environment overrides)."""

    topology_file: Path | None = None
    """``KOORD_TOPOLOGY``: the topic topology file; default is the one shipped
    in ``deploy/topics.yaml``."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        return cls(
            broker=env.get("KOORD_BROKER") or None,
            home=Path(env.get("KOORD_HOME") or ".koord"),
            database_url=env.get("KOORD_DATABASE_URL") or None,
            environment=env.get("KOORD_ENV") or "embedded",
            topology_file=Path(env["KOORD_TOPOLOGY"]) if env.get("KOORD_TOPOLOGY") else None,
        )

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.home / 'readmodel.sqlite').resolve()}"
