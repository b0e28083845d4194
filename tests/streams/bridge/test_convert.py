"""API objects become the records koord apply makes; what cannot be converted names the object."""

import pytest

from streams.bridge import convert
from streams.bridge.resources import WATCHED
from streams.objects import ManifestError
from streams.objects.documents import Document
from streams.objects.records import to_record

PODS = next(r for r in WATCHED if r.kind == "Pod")
QUOTAS = next(r for r in WATCHED if r.kind == "ElasticQuota")
LISTED_POD = {"metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "812",
                           "managedFields": [{"manager": "kubectl"}]},
              "spec": {"schedulerName": "koord-scheduler", "containers": [
                  {"name": "c", "image": "app", "resources": {"requests": {"cpu": "500m"}}}]},
              "status": {"phase": "Pending"}}


def test_a_listed_pod_is_the_record_apply_makes_of_its_manifest():
    record = convert.to_object_record(PODS, LISTED_POD)
    manifest = {**LISTED_POD, "apiVersion": "v1", "kind": "Pod",
                "metadata": {k: v for k, v in LISTED_POD["metadata"].items() if k != "managedFields"}}
    assert record == to_record(Document("apply", 0, 1, manifest))
    assert (record.topic, record.key, record.record["requests"]["cpu"]) == ("pods", "default/web", 500)


def test_an_object_that_cannot_be_converted_is_a_dead_letter_naming_it():
    quota = {"metadata": {"name": "bad", "namespace": "team", "resourceVersion": "9"},
             "spec": {"max": {"cpu": "lots"}}}
    with pytest.raises(ManifestError) as refused:
        convert.to_object_record(QUOTAS, quota)
    letter = convert.dead_letter_record(QUOTAS, quota, str(refused.value), "koord.quotas")
    assert letter["reason"].startswith("ElasticQuota team/bad resourceVersion 9: ")
    assert "spec.max.cpu" in letter["reason"]
    assert (letter["key"], letter["stage"], letter["sourceOffset"]) == (b"team/bad", "bridge", 9)
