import json

import pytest

from streams.settings import Settings


@pytest.mark.parametrize("env, kind", [
    pytest.param({}, "tansu", id="embedded-default"),
    pytest.param({"KOORD_BROKER": "k:9092"}, "kafka", id="external-is-kafka"),
    pytest.param({"KOORD_BROKER": "k:9092", "KOORD_BROKER_KIND": "tansu"}, "tansu", id="explicit"),
])
def test_broker_kind(env, kind, tmp_path):
    settings = Settings.from_env({**env, "KOORD_HOME": str(tmp_path)})
    assert settings.resolved_broker_kind == kind
    assert settings.tansu == (kind == "tansu")


def test_broker_kind_of_koord_up_is_read_from_its_state(tmp_path):
    (tmp_path / "up.json").write_text(json.dumps({"broker_kind": "kafka"}))
    assert Settings.from_env({"KOORD_HOME": str(tmp_path)}).resolved_broker_kind == "kafka"


@pytest.mark.parametrize("env, message", [
    pytest.param({"KOORD_BROKER_KIND": "redpanda"}, "KOORD_BROKER_KIND must be kafka or tansu", id="kind"),
    pytest.param({"KOORD_PROCESSING_GUARANTEE": "at_most_once"}, "KOORD_PROCESSING_GUARANTEE must be", id="guarantee"),
])
def test_bad_values_are_named(env, message):
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)
