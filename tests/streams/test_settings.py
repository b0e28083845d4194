import dataclasses
import json
from pathlib import Path

import pytest

from streams.settings import Secret, Settings


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


def test_every_field_is_read_from_its_own_variable(tmp_path):
    env = {"KOORD_BROKER": "k:9092", "KOORD_BROKER_KIND": "kafka", "KOORD_PROCESSING_GUARANTEE": "exactly_once",
           "KOORD_HOME": str(tmp_path), "KOORD_DATABASE_URL": "sqlite://", "KOORD_ENV": "prod",
           "KOORD_TOPOLOGY": "t.yaml", "KOORD_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
           "KOORD_KAFKA_SASL_MECHANISM": "PLAIN", "KOORD_KAFKA_SASL_USERNAME": "koord",
           "KOORD_KAFKA_SASL_PASSWORD": "s3cret", "KOORD_KAFKA_SSL_CAFILE": "ca.pem",
           "KOORD_KAFKA_SSL_CERTFILE": "c.pem", "KOORD_KAFKA_SSL_KEYFILE": "k.pem", "KOORD_ACTUATION_KEY": "key",
           "KOORD_RECORD_KEY": "records", "KOORD_METRICS_PER_NODE": "0", "KOORD_CACHE_DIR": str(tmp_path / "cache")}
    assert Settings.from_env(env) == Settings(
        broker="k:9092", broker_kind="kafka", processing_guarantee="exactly_once", home=tmp_path,
        database_url="sqlite://", environment="prod", topology_file=Path("t.yaml"), security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN", sasl_username="koord", sasl_password=Secret("s3cret"), ssl_cafile="ca.pem",
        ssl_certfile="c.pem", ssl_keyfile="k.pem", actuation_key=Secret("key"), record_key=Secret("records"),
        metrics_per_node="0",
        cache_dir=tmp_path / "cache")
    assert {field.metadata["env"] for field in dataclasses.fields(Settings)} == set(env)


def test_unset_or_empty_variables_keep_the_defaults():
    empty = {"KOORD_HOME": "", "KOORD_PROCESSING_GUARANTEE": ""}
    assert Settings.from_env({}) == Settings.from_env(empty) == Settings()


def test_a_value_outside_its_literal_names_every_allowed_value_when_constructed_too():
    with pytest.raises(ValueError, match="KOORD_PROCESSING_GUARANTEE must be at_least_once or exactly_once, "
                                         "not 'at_most_once'"):
        Settings(processing_guarantee="at_most_once")


def test_secrets_are_plain_strings_that_never_show_in_the_settings_repr():
    settings = Settings.from_env({"KOORD_KAFKA_SASL_PASSWORD": "s3cret", "KOORD_ACTUATION_KEY": "hmac-key"})
    assert settings.sasl_password == "s3cret" and settings.sasl_password.encode() == b"s3cret"
    assert isinstance(settings.actuation_key, str) and settings.actuation_key + "!" == "hmac-key!"
    for shown in (repr(settings), str(settings), f"{settings!r}"):
        assert "s3cret" not in shown and "hmac-key" not in shown
