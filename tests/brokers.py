"""The brokers tests run on: the embedded Tansu and a local Apache Kafka (``streams.broker.local``).

Without Java or Maven the Kafka cases skip with the reason, unless ``KOORD_REQUIRE_KAFKA`` is set
(``make test`` sets it): then they fail.
"""

from __future__ import annotations

import os

import pytest

from streams.broker import kraft
from streams.maven import MissingPrerequisite


def require_kafka() -> None:
    """Skip (or fail, with KOORD_REQUIRE_KAFKA) when the real-Kafka tier cannot run on this machine."""
    try:
        kraft.kafka_libs()
    except MissingPrerequisite as error:
        if os.environ.get("KOORD_REQUIRE_KAFKA"):
            pytest.fail(f"{error}; KOORD_REQUIRE_KAFKA is set, so this is a failure, not a skip")
        pytest.skip(str(error))
