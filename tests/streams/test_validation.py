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


@pytest.mark.parametrize("manifest, expected", [
    pytest.param('{"metadata": {"name": "web", "namespace": "shop"}}', [], id="the record's own object"),
    pytest.param("{}", [], id="a writer that kept no manifest"),
    pytest.param('{"metadata": {"naee": "web"}}', ["manifest names None, not the record's shop/'web'"],
                 id="a bit-flipped name key"),
    pytest.param('{"metadata": {"name": "other", "namespace": "shop"}}',
                 ["manifest names shop/'other', not the record's shop/'web'"], id="another object"),
    pytest.param("null", ["manifest is not a JSON object but NoneType"], id="null"),
    pytest.param("[]", ["manifest is not a JSON object but list"], id="a list"),
])
def test_a_manifest_names_the_records_object(manifest, expected):
    """Issue 37 failure 10: ``koord get`` showed such manifests as objects without a name."""
    from streams.validation import manifest_problems

    record = {"metadata": {"name": "web", "namespace": "shop"}, "manifest": manifest}
    assert manifest_problems("ConfigMap", record) == expected
