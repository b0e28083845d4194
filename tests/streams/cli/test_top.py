"""koord top prints quantities in one human form: cores with one decimal, bytes in binary units."""

import pytest

from streams.cli.top import human


@pytest.mark.parametrize("resource, value, shown", [
    ("cpu", 3500, "3.5"), ("cpu", 64000, "64"), ("cpu", 250, "0.2"),
    ("memory", 6509288968, "6.1Gi"), ("memory", 1280 << 20, "1.2Gi"), ("memory", 384 << 30, "384Gi"),
    ("memory", 512 << 20, "512Mi"), ("memory", 100, "100"),
    ("kubernetes.io/batch-cpu", 10000, "10"), ("kubernetes.io/batch-memory", 15 << 30, "15Gi"),
    ("pods", 110, "110"),
])
def test_one_human_form(resource, value, shown):
    assert human(resource, value) == shown
