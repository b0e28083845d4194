import pytest

from streams.validation import problems


def pod(name="web", namespace="default", cpu=100):
    return {"metadata": {"name": name, "namespace": namespace}, "requests": {"cpu": cpu}}


@pytest.mark.parametrize("source, key, kind, record, expected", [
    pytest.param("pods", "default/web", "Pod", pod(), [], id="valid"),
    pytest.param("pods", "default/web", "Pod", pod(cpu=-1),
                 ["requests.cpu: quantity must not be negative: -1"], id="negative-request"),
    pytest.param("pods", "default/web", "Node", {"metadata": {"name": "web"}},
                 ["a Node record does not belong on the pods topic (expected Pod)"], id="wrong-kind"),
    pytest.param("pods", "default/other", "Pod", pod(),
                 ["key 'default/other' does not name the object (expected 'default/web')"], id="key-mismatch"),
    pytest.param("nodes", "n1", "Node", {"metadata": {"name": "n1"}, "allocatable": {"memory": -5}},
                 ["allocatable.memory: quantity must not be negative: -5"], id="negative-allocatable"),
    pytest.param("nodes", "", "Node", {"metadata": {"name": ""}}, ["metadata.name is empty"], id="no-name"),
])
def test_problems(source, key, kind, record, expected):
    assert problems(source, key, kind, record) == expected
