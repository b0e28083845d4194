"""The bench harness names the broker it ran on; with KOORD_BROKER set it uses that one as it is."""

from __future__ import annotations

import pytest

from streams.bench import harness
from streams.settings import Settings


@pytest.mark.parametrize("env, kind, described", [
    pytest.param({"KOORD_BROKER": "10.0.0.1:9092"}, "kafka", "KOORD_BROKER 10.0.0.1:9092 (kafka)",
                 id="kind-unset-means-kafka"),
    pytest.param({"KOORD_BROKER": "10.0.0.1:9092", "KOORD_BROKER_KIND": "tansu"}, "tansu",
                 "KOORD_BROKER 10.0.0.1:9092 (tansu)", id="kind-from-environment"),
])
def test_existing_broker_is_used_whatever_kind_was_asked(env, kind, described):
    with harness.running("tansu", Settings.from_env(env)) as running:
        assert (running.bootstrap, running.broker_kind, running.broker_origin) == ("10.0.0.1:9092", kind,
                                                                                   "KOORD_BROKER")
        assert running.describe() == described
