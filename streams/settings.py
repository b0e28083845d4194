"""Process-wide settings, read once from the environment.

Every knob a user can turn lives here with its unit and default; the CLI and
the Faust app derive from this one dataclass (Faust's settings file is the
model). Each field names its environment variable once, in its metadata
(``from_env("KOORD_...")``), and ``load_env`` reads every such field of a
settings dataclass: this one and the node aggregate's
(``streams.nodeaggregate.settings``). A field typed ``Literal[...]`` takes
one of its values or fails naming the variable and the values allowed; a
``Secret`` (the SASL password, the actuation key) never shows in ``repr`` or
``str`` of the settings.

Nothing else reads a ``KOORD_`` variable; child processes inherit the
environment as it is (``streams.supervision``, ``streams.kube.controlplane``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

ENV = "env"
PARSE = "parse"

BrokerKind = Literal["kafka", "tansu"]
ProcessingGuarantee = Literal["at_least_once", "exactly_once"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
"""The values of ``KOORD_KAFKA_SECURITY_PROTOCOL`` a client accepts (any case; ``streams.broker.security``)."""
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
"""The values of ``KOORD_KAFKA_SASL_MECHANISM`` a client accepts (any case; ``streams.broker.security``)."""


class Secret(str):
    """A password or key: a ``str`` everywhere it is used, masked in ``repr`` (so in a settings' repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secret('********')"


def from_env(name: str, parse: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Field metadata: the field is read from the variable ``name``, with ``parse`` when its type is not
    one ``load_env`` converts by itself (str, Secret, Path, a Literal of strings)."""
    return {ENV: name, PARSE: parse} if parse else {ENV: name}


def env_name(cls: type, field: str) -> str:
    """The environment variable of ``cls.field``."""
    return {f.name: f for f in dataclasses.fields(cls)}[field].metadata[ENV]


def _choices(values: tuple[str, ...]) -> str:
    return " or ".join(values) if len(values) <= 2 else f"one of {', '.join(values)}"


def _without_none(hint: Any) -> Any:
    """``X`` of ``X | None``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """Field name -> its type, ``| None`` removed."""
    return {name: _without_none(hint) for name, hint in typing.get_type_hints(cls).items()}


def _check_choice(field: dataclasses.Field, kind: Any, value: Any) -> None:
    if typing.get_origin(kind) is Literal and value is not None and value not in typing.get_args(kind):
        raise ValueError(f"{field.metadata.get(ENV, field.name)} must be {_choices(typing.get_args(kind))}, "
                         f"not {value!r}")


def check_choices(settings: Any) -> None:
    """ValueError naming the variable and the values allowed when a ``Literal`` field holds another value."""
    kinds = _field_types(type(settings))
    for field in dataclasses.fields(settings):
        _check_choice(field, kinds[field.name], getattr(settings, field.name))


def _convert(raw: str, kind: Any, field: dataclasses.Field) -> Any:
    name = field.metadata[ENV]
    if field.metadata.get(PARSE):
        try:
            return field.metadata[PARSE](raw)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    if kind in (Path, Secret):
        return kind(raw)
    _check_choice(field, kind, raw)
    return raw


def load_env(cls: type, env: Mapping[str, str] | None = None, **given: Any) -> Any:
    """``cls(**values)``: every field with ``from_env`` metadata from its variable (unset or empty: the
    field's default), the ``given`` values as they are."""
    env = os.environ if env is None else env
    kinds = _field_types(cls)
    values = dict(given)
    for field in dataclasses.fields(cls):
        raw = env.get(field.metadata[ENV]) if ENV in field.metadata else None
        if raw and field.name not in values:
            values[field.name] = _convert(raw, kinds[field.name], field)
    return cls(**values)


@dataclasses.dataclass(frozen=True)
class Settings:
    broker: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_BROKER"))
    """``KOORD_BROKER``: Kafka bootstrap servers ("host:port[,host:port]").
    Unset means the embedded broker that ``koord up`` starts (its address is
    then read from ``KOORD_HOME/up.json``)."""

    broker_kind: BrokerKind | None = dataclasses.field(default=None, metadata=from_env("KOORD_BROKER_KIND"))
    """``KOORD_BROKER_KIND``: ``kafka`` or ``tansu``, the broker behind KOORD_BROKER. Only Tansu gets the
    workarounds of ``streams.broker.tansu_workarounds``. Unset: ``kafka`` when KOORD_BROKER is set,
    otherwise the kind ``koord up`` recorded in ``KOORD_HOME/up.json`` (Tansu by default)."""

    processing_guarantee: ProcessingGuarantee = dataclasses.field(
        default="at_least_once", metadata=from_env("KOORD_PROCESSING_GUARANTEE"))
    """``KOORD_PROCESSING_GUARANTEE``: ``at_least_once`` or ``exactly_once`` (Kafka transactions: the
    aggregates' outputs and offsets commit together; real Kafka only, Tansu has no transactions)."""

    home: Path = dataclasses.field(default=Path(".koord"), metadata=from_env("KOORD_HOME"))
    """``KOORD_HOME``: where ``koord up`` keeps its state, logs and the SQLite
    read model."""

    database_url: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_DATABASE_URL"))
    """``KOORD_DATABASE_URL``: SQLAlchemy URL of the read model. Unset means
    SQLite at ``KOORD_HOME/readmodel.sqlite``."""

    environment: str = dataclasses.field(default="embedded", metadata=from_env("KOORD_ENV"))
    """``KOORD_ENV``: the environment of ``deploy/topics.yaml`` to apply
    (replication factor and per-environment overrides)."""

    topology_file: Path | None = dataclasses.field(default=None, metadata=from_env("KOORD_TOPOLOGY"))
    """``KOORD_TOPOLOGY``: the topic topology file; default is the one shipped
    in ``deploy/topics.yaml``."""

    security_protocol: str = dataclasses.field(default="PLAINTEXT",
                                               metadata=from_env("KOORD_KAFKA_SECURITY_PROTOCOL"))
    """``KOORD_KAFKA_SECURITY_PROTOCOL``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (``SecurityProtocol``),
    in any case; ``streams.broker.security`` checks it when it builds a client's credentials."""

    sasl_mechanism: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SASL_MECHANISM"))
    """``KOORD_KAFKA_SASL_MECHANISM``: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (``SaslMechanism``, any case;
    SASL protocols only, checked with the protocol)."""

    sasl_username: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SASL_USERNAME"))
    """``KOORD_KAFKA_SASL_USERNAME``."""

    sasl_password: Secret | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SASL_PASSWORD"))
    """``KOORD_KAFKA_SASL_PASSWORD``."""

    ssl_cafile: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SSL_CAFILE"))
    """``KOORD_KAFKA_SSL_CAFILE``: CA bundle to verify the brokers (SSL and SASL_SSL)."""

    ssl_certfile: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SSL_CERTFILE"))
    """``KOORD_KAFKA_SSL_CERTFILE``: client certificate, for brokers that require mutual TLS."""

    ssl_keyfile: str | None = dataclasses.field(default=None, metadata=from_env("KOORD_KAFKA_SSL_KEYFILE"))
    """``KOORD_KAFKA_SSL_KEYFILE``: the client certificate's key."""

    actuation_key: Secret | None = dataclasses.field(default=None, metadata=from_env("KOORD_ACTUATION_KEY"))
    """``KOORD_ACTUATION_KEY``: the shared HMAC key Actuation records are signed with by the worker and
    verified with by the node agents (``streams.actuation``). Unset: actuations are not signed."""

    record_key: Secret | None = dataclasses.field(default=None, metadata=from_env("KOORD_RECORD_KEY"))
    """``KOORD_RECORD_KEY``: the shared HMAC key the pipeline signs its inbox records and decisions with and
    verifies them with (``streams.signing``). Unset: the key in ``KOORD_HOME/record.key``, created by the
    first worker of the home; workers on several hosts must share one ``KOORD_RECORD_KEY``."""

    metrics_per_node: str = dataclasses.field(default="1", metadata=from_env("KOORD_METRICS_PER_NODE"))
    """``KOORD_METRICS_PER_NODE``: ``0`` drops the per-node Prometheus series (allocatable, usage), whose
    count grows with the fleet; anything else keeps them (``streams.metrics.PER_NODE_ENABLED``)."""

    cache_dir: Path = dataclasses.field(default=Path.home() / ".cache" / "koordstream",
                                        metadata=from_env("KOORD_CACHE_DIR"))
    """``KOORD_CACHE_DIR``: downloads and builds kept outside the checkout (the Kafka jars, the Kubernetes
    binaries; ``streams.cache``)."""

    def __post_init__(self) -> None:
        check_choices(self)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        return load_env(cls, env)

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
