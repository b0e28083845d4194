import pytest

from streams.broker.security import SecurityConfigError, aiokafka_auth
from streams.settings import Settings


@pytest.mark.parametrize("env, expected", [
    pytest.param({}, {"security_protocol": "PLAINTEXT"}, id="plaintext-default"),
    pytest.param({"KOORD_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KOORD_KAFKA_SASL_MECHANISM": "PLAIN",
                  "KOORD_KAFKA_SASL_USERNAME": "koord", "KOORD_KAFKA_SASL_PASSWORD": "s3cret"},
                 {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                  "sasl_plain_username": "koord", "sasl_plain_password": "s3cret"}, id="sasl-plain"),
    pytest.param({"KOORD_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KOORD_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
                  "KOORD_KAFKA_SASL_USERNAME": "koord", "KOORD_KAFKA_SASL_PASSWORD": "s3cret"},
                 {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                  "sasl_plain_username": "koord", "sasl_plain_password": "s3cret"}, id="scram"),
])
def test_auth_settings(env, expected):
    assert aiokafka_auth(Settings.from_env(env)) == expected


def test_tls_builds_an_ssl_context():
    auth = aiokafka_auth(Settings.from_env({"KOORD_KAFKA_SECURITY_PROTOCOL": "SSL"}))
    assert auth["security_protocol"] == "SSL" and auth["ssl_context"] is not None


@pytest.mark.parametrize("env, message", [
    pytest.param({"KOORD_KAFKA_SECURITY_PROTOCOL": "TLS"}, "expected one of PLAINTEXT", id="unknown-protocol"),
    pytest.param({"KOORD_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KOORD_KAFKA_SASL_MECHANISM": "GSSAPI"},
                 "expected one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", id="unsupported-mechanism"),
    pytest.param({"KOORD_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KOORD_KAFKA_SASL_MECHANISM": "PLAIN"},
                 "needs KOORD_KAFKA_SASL_USERNAME", id="no-credentials"),
])
def test_inconsistent_settings_are_named(env, message):
    with pytest.raises(SecurityConfigError, match=message):
        aiokafka_auth(Settings.from_env(env))
