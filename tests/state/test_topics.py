"""Tests of state.topics: resolving logical topic names to real ones."""

import pytest

from state.topics import DEFAULT_TOPICS, resolve_topics


def test_overrides_replace_only_their_names():
    topics = resolve_topics({"pods": "prod.pods"})

    assert topics == {**DEFAULT_TOPICS, "pods": "prod.pods"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"pod": "koord.pods"}, "unknown logical topic names", id="unknown-name"),
        pytest.param({"pods": "koord.nodes"}, "more than one logical name", id="shared-topic"),
    ],
)
def test_ambiguous_mappings_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        resolve_topics(overrides)
