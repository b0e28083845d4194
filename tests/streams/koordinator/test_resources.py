"""Resource names by priority class (``TranslateResourceNameByPriorityClass``)."""

import pytest

from streams.koordinator.resources import translate_resource


@pytest.mark.parametrize("resource, klass, want", [
    ("cpu", "koord-batch", "kubernetes.io/batch-cpu"), ("memory", "koord-mid", "kubernetes.io/mid-memory"),
    ("cpu", "koord-prod", "cpu"), ("cpu", "", "cpu"), ("cpu", "koord-free", ""),
])
def test_translate_resource_name_by_priority_class(resource, klass, want):
    assert translate_resource(resource, klass) == want
