"""The agents' Faust topics: keys and values stay bytes, decoded inside the agents (``streams.app``
says why)."""

from __future__ import annotations

import faust


def raw_topic(app: faust.App, name: str) -> faust.TopicT:
    """``app``'s topic ``name`` with raw bytes keys and values."""
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
