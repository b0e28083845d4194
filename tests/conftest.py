"""Shared fixtures: the repository root on sys.path for ``tests.*`` helpers; the broker kind."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from streams.broker import local  # noqa: E402  (needs the repository root on sys.path)
from tests.brokers import require_kafka  # noqa: E402


@pytest.fixture(scope="session", params=local.KINDS)
def broker_kind(request) -> str:
    """``tansu`` or ``kafka``: the broker every test that uses it runs on, one round per kind (pytest
    runs every test of one kind before it starts the other)."""
    if request.param == "kafka":
        require_kafka()
    return request.param
