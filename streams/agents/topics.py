"""The agents' Faust topics: keys and values stay bytes, decoded inside the agents (``streams.app``
says why)."""

from __future__ import annotations

import faust


def raw_topic(app: faust.App, *names: str) -> faust.TopicT:
    """``app``'s topic ``names`` (one stream of them all) with raw bytes keys and values."""
    return app.topic(*names, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
