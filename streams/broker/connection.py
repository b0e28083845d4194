"""How every Kafka client reaches the broker: its bootstrap servers with the TLS/SASL settings of the
environment (``streams.broker.security``), so all clients connect alike, and the admin client built on
them (topic creation, incarnation, ACLs)."""

from __future__ import annotations

import contextlib
from typing import AsyncIterator

from aiokafka.admin import AIOKafkaAdminClient

from streams.broker.security import aiokafka_auth
from streams.settings import Settings


def client_settings(bootstrap: str) -> dict:
    """Bootstrap servers plus the TLS/SASL settings of the environment (``streams.broker.security``)."""
    return {"bootstrap_servers": bootstrap.split(","), **aiokafka_auth(Settings.from_env())}


@contextlib.asynccontextmanager
async def admin_client(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    admin = AIOKafkaAdminClient(**client_settings(bootstrap), request_timeout_ms=10_000)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()
