"""TLS and SASL for every Kafka client, from ``Settings``.

One function, :func:`aiokafka_auth`, checks the settings and builds the keyword arguments of an
aiokafka client; the plain clients (CLI, projection, node agent) take them as they are and the Faust
worker translates the same arguments into its credentials (``streams.app``), so both kinds of client
always connect alike.
"""

from __future__ import annotations

import typing

from aiokafka.helpers import create_ssl_context

from streams.settings import SaslMechanism, SecurityProtocol, Settings

PROTOCOLS = typing.get_args(SecurityProtocol)
MECHANISMS = typing.get_args(SaslMechanism)


class SecurityConfigError(ValueError):
    """The Kafka security settings are inconsistent."""


def aiokafka_auth(settings: Settings) -> dict:
    """Keyword arguments for aiokafka clients: security protocol, SASL and SSL context (left out without TLS)."""
    protocol = settings.security_protocol.upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(f"KOORD_KAFKA_SECURITY_PROTOCOL={settings.security_protocol!r}: "
                                  f"expected one of {', '.join(PROTOCOLS)}")
    auth: dict = {"security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        auth["ssl_context"] = create_ssl_context(cafile=settings.ssl_cafile, certfile=settings.ssl_certfile,
                                                 keyfile=settings.ssl_keyfile)
    if protocol.startswith("SASL"):
        mechanism = (settings.sasl_mechanism or "").upper()
        if mechanism not in MECHANISMS:
            raise SecurityConfigError(f"KOORD_KAFKA_SASL_MECHANISM={settings.sasl_mechanism!r}: "
                                      f"expected one of {', '.join(MECHANISMS)} with {protocol}")
        if not settings.sasl_username or settings.sasl_password is None:
            raise SecurityConfigError("SASL needs KOORD_KAFKA_SASL_USERNAME and KOORD_KAFKA_SASL_PASSWORD")
        auth.update(sasl_mechanism=mechanism, sasl_plain_username=settings.sasl_username,
                    sasl_plain_password=settings.sasl_password)
    return auth
