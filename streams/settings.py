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

    broker_kind: str | None = None
    """``KOORD_BROKER_KIND``: ``kafka`` or ``tansu``, the broker behind KOORD_BROKER. Only Tansu gets the
    workarounds of ``streams.broker.tansu_workarounds``. Unset: ``kafka`` when KOORD_BROKER is set,
    otherwise the kind ``koord up`` recorded in ``KOORD_HOME/up.json`` (Tansu by default)."""

    processing_guarantee: str = "at_least_once"
    """``KOORD_PROCESSING_GUARANTEE``: ``at_least_once`` or ``exactly_once`` (Kafka transactions: the
    aggregates' outputs and offsets commit together; real Kafka only, Tansu has no transactions)."""

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

    security_protocol: str = "PLAINTEXT"
    """``KOORD_KAFKA_SECURITY_PROTOCOL``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""

    sasl_mechanism: str | None = None
    """``KOORD_KAFKA_SASL_MECHANISM``: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL protocols only)."""

    sasl_username: str | None = None
    """``KOORD_KAFKA_SASL_USERNAME``."""

    sasl_password: str | None = None
    """``KOORD_KAFKA_SASL_PASSWORD``."""

    ssl_cafile: str | None = None
    """``KOORD_KAFKA_SSL_CAFILE``: CA bundle to verify the brokers (SSL and SASL_SSL)."""

    ssl_certfile: str | None = None
    """``KOORD_KAFKA_SSL_CERTFILE``: client certificate, for brokers that require mutual TLS."""

    ssl_keyfile: str | None = None
    """``KOORD_KAFKA_SSL_KEYFILE``: the client certificate's key."""

    def __post_init__(self) -> None:
        if self.broker_kind not in (None, "kafka", "tansu"):
            raise ValueError(f"KOORD_BROKER_KIND must be kafka or tansu, not {self.broker_kind!r}")
        if self.processing_guarantee not in ("at_least_once", "exactly_once"):
            raise ValueError(f"KOORD_PROCESSING_GUARANTEE must be at_least_once or exactly_once, "
                             f"not {self.processing_guarantee!r}")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        return cls(
            broker=env.get("KOORD_BROKER") or None,
            broker_kind=env.get("KOORD_BROKER_KIND") or None,
            processing_guarantee=env.get("KOORD_PROCESSING_GUARANTEE") or "at_least_once",
            home=Path(env.get("KOORD_HOME") or ".koord"),
            database_url=env.get("KOORD_DATABASE_URL") or None,
            environment=env.get("KOORD_ENV") or "embedded",
            topology_file=Path(env["KOORD_TOPOLOGY"]) if env.get("KOORD_TOPOLOGY") else None,
            security_protocol=env.get("KOORD_KAFKA_SECURITY_PROTOCOL") or "PLAINTEXT",
            sasl_mechanism=env.get("KOORD_KAFKA_SASL_MECHANISM") or None,
            sasl_username=env.get("KOORD_KAFKA_SASL_USERNAME") or None,
            sasl_password=env.get("KOORD_KAFKA_SASL_PASSWORD") or None,
            ssl_cafile=env.get("KOORD_KAFKA_SSL_CAFILE") or None,
            ssl_certfile=env.get("KOORD_KAFKA_SSL_CERTFILE") or None,
            ssl_keyfile=env.get("KOORD_KAFKA_SSL_KEYFILE") or None,
        )

    @property
    def resolved_broker_kind(self) -> str:
        if self.broker_kind:
            return self.broker_kind
        if self.broker:
            return "kafka"
        import json

        try:
            return json.loads((self.home / "up.json").read_text()).get("broker_kind", "tansu")
        except (OSError, ValueError):
            return "tansu"

    @property
    def tansu(self) -> bool:
        """Whether the broker is the embedded Tansu, which needs ``tansu_workarounds``."""
        return self.resolved_broker_kind == "tansu"

    @property
    def isolation_level(self) -> str:
        """How every reader of koordstream's topics reads: under exactly-once only committed transactions
        (``read_committed``), so no reader sees an output the worker aborted; otherwise everything."""
        return "read_committed" if self.processing_guarantee == "exactly_once" else "read_uncommitted"

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.home / 'readmodel.sqlite').resolve()}"
