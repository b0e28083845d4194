"""Field paths and the document-wide JSON check."""

import pytest

from streams.objects.fields import MAX_VALUES, child, item
from tests.streams.objects.support import problems_of


@pytest.mark.parametrize(
    ("path", "key", "expected"),
    [
        ("", "spec", "spec"),
        ("spec", "nodeName", "spec.nodeName"),
        ("requests", "cpu", "requests.cpu"),
        ("requests", "nvidia.com/gpu", "requests[nvidia.com/gpu]"),
        ("metadata.labels", "kubernetes.io/arch", "metadata.labels[kubernetes.io/arch]"),
        ("data", "cpu-normalization-config", "data.cpu-normalization-config"),
    ],
    ids=lambda value: value or "root",
)
def test_child_paths(path, key, expected):
    assert child(path, key) == expected


def test_item_path():
    assert item("spec.containers", 2) == "spec.containers[2]"


def test_yaml_alias_bomb_is_refused_without_expanding_it():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx0: &x0 [a, a, a, a, a, a, a, a, a, a]\n"
    for level in range(1, 8):
        text += f"x{level}: &x{level} [{', '.join([f'*x{level - 1}'] * 10)}]\n"
    (problem,) = problems_of(text)
    assert problem.endswith(f"document holds more than {MAX_VALUES} values once YAML aliases are expanded")
