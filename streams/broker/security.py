"""TLS and SASL for every Kafka client, from ``Settings``.

One function builds Faust's credentials; the plain aiokafka clients (CLI,
projection, node agent) get their settings from Faust's own translation of
the same credentials, so both kinds of client always connect alike.
"""

from __future__ import annotations

import faust
from aiokafka.helpers import create_ssl_context
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from streams.settings import Settings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SecurityConfigError(ValueError):
    """The Kafka security settings are inconsistent."""


def credentials(settings: Settings):
    """Faust credentials for ``settings`` (None for PLAINTEXT)."""
    protocol = settings.security_protocol.upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(f"KOORD_KAFKA_SECURITY_PROTOCOL={settings.security_protocol!r}: "
                                  f"expected one of {', '.join(PROTOCOLS)}")
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = create_ssl_context(cafile=settings.ssl_cafile, certfile=settings.ssl_certfile,
                                     keyfile=settings.ssl_keyfile)
    if protocol.startswith("SASL"):
        mechanism = (settings.sasl_mechanism or "").upper()
        if mechanism not in MECHANISMS:
            raise SecurityConfigError(f"KOORD_KAFKA_SASL_MECHANISM={settings.sasl_mechanism!r}: "
                                      f"expected one of {', '.join(MECHANISMS)} with {protocol}")
        if not settings.sasl_username or settings.sasl_password is None:
            raise SecurityConfigError("SASL needs KOORD_KAFKA_SASL_USERNAME and KOORD_KAFKA_SASL_PASSWORD")
        return faust.SASLCredentials(username=settings.sasl_username, password=settings.sasl_password,
                                     ssl_context=context, mechanism=mechanism)
    if context is not None:
        return faust.SSLCredentials(context)
    return None


def aiokafka_auth(settings: Settings) -> dict:
    """Keyword arguments for aiokafka clients: security protocol, SASL and SSL context."""
    auth = dict(credentials_to_aiokafka_auth(credentials(settings)))
    if auth.get("ssl_context") is None:
        auth.pop("ssl_context", None)
    return auth
