"""``validation.check_source`` and ``pod_manifest_problems`` (issue 37, failure 10): the router and the read
model refuse the same source records, among them one over the size limit and a Pod whose manifest's
containers contradict its typed requests or limits (``cpu: 999`` shown, 100m scheduled)."""

from __future__ import annotations

import copy
import json
import types

import pytest

from streams import limits, routing
from streams.objects import load_and_validate
from streams.schemas import codec
from streams.validation import check_source, pod_manifest_problems, problems

NOW = 1_700_000_000_000
POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  hostname: h
  initContainers: [{name: init, image: busybox, resources: {requests: {cpu: 200m}}}]
  containers:
  - {name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}}
"""


def applied() -> dict:
    """The Pod record ``koord apply`` builds from POD."""
    [record] = load_and_validate("-", stdin_text=POD)
    return copy.deepcopy(record.record)


def with_manifest(record: dict, edit) -> dict:
    manifest = json.loads(record["manifest"])
    edit(manifest)
    return {**record, "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":"))}


def container(manifest: dict) -> dict:
    return manifest["spec"]["containers"][0]["resources"]


def test_a_pod_as_koord_apply_builds_it_has_no_problem():
    assert applied()["requests"] == {"cpu": 200, "memory": 64 * 2**20}
    assert problems("pods", "default/web", "Pod", applied()) == []


@pytest.mark.parametrize(("edit", "expected"), [
    pytest.param(lambda m: container(m)["requests"].update(cpu="999"),
                 "requests {'cpu': 200, 'memory': 67108864} contradict the manifest's containers, which give "
                 "{'cpu': 999000, 'memory': 67108864}", id="manifest-cpu-999"),
    pytest.param(lambda m: container(m)["limits"].update(cpu="1"),
                 "limits {'memory': 134217728} contradict the manifest's containers, which give "
                 "{'cpu': 1000, 'memory': 134217728}", id="manifest-extra-limit"),
    pytest.param(lambda m: m["spec"].pop("initContainers"),
                 "requests {'cpu': 200, 'memory': 67108864} contradict the manifest's containers, which give "
                 "{'cpu': 100, 'memory': 67108864}", id="manifest-without-init-container"),
    pytest.param(lambda m: container(m)["requests"].update(cpu="lots"),
                 "manifest's containers cannot be read: spec.containers[0].resources.requests.cpu", id="bad-quantity"),
])
def test_a_pod_whose_manifest_contradicts_its_typed_resources_is_refused(edit, expected):
    found = problems("pods", "default/web", "Pod", with_manifest(applied(), edit))
    assert len(found) == 1 and found[0].startswith(expected)


def test_a_pod_whose_typed_request_differs_from_its_manifest_is_refused():
    record = applied()
    record["requests"]["cpu"] = 100
    assert pod_manifest_problems(record) == [
        "requests {'cpu': 100, 'memory': 67108864} contradict the manifest's containers, which give "
        "{'cpu': 200, 'memory': 67108864}"]


@pytest.mark.parametrize(("manifest", "readable"), [
    pytest.param("{not json", False, id="not-json"), pytest.param("", False, id="empty"),
    pytest.param("[" * 100_000, False, id="nested-too-deep"),
    pytest.param("[]", True, id="list"), pytest.param("null", True, id="null"),
    pytest.param('{"spec": []}', True, id="spec-not-object")])
def test_a_manifest_without_containers_states_no_resources(manifest, readable):
    record = {**applied(), "manifest": manifest}
    assert pod_manifest_problems(record) != []
    assert (pod_manifest_problems({**record, "requests": {}, "limits": {}}) == []) == readable


def message(key: bytes | None, value: bytes | None, headers=()):
    return types.SimpleNamespace(key=key, value=value, headers=list(headers))


def test_check_source_passes_a_good_pod_and_a_tombstone():
    assert check_source("pods", message(b"default/web", codec.encode("Pod", applied())), NOW) == (
        "default/web", "Pod", applied(), None)
    assert check_source("pods", message(b"default/web", None), NOW) == (
        "default/web", routing.kind_of_deletion("pods", "default/web"), None, None)


def test_check_source_refuses_a_record_over_the_size_limit_headers_included():
    value = codec.encode("Pod", applied())
    headroom = limits.RECORD_MAX_BYTES - limits.record_size(b"default/web", value)
    assert check_source("pods", message(b"default/web", value, [("pad", bytes(headroom - 10))]), NOW)[3] is None
    reason = check_source("pods", message(b"default/web", value, [("pad", bytes(headroom + 10))]), NOW)[3]
    assert "over the 1,044,480-byte limit of a record" in reason


@pytest.mark.parametrize(("key", "value", "expected"), [
    pytest.param(b"default/\xff", codec.encode("Pod", applied()), "key is not UTF-8", id="key-not-utf8"),
    pytest.param(b"default/web", b"\x00garbage", "undecodable record", id="undecodable"),
    pytest.param(b"default/web", codec.encode("Pod", with_manifest(applied(), lambda m: container(m)["requests"]
                                                                     .update(cpu="999"))),
                 "contradict the manifest's containers", id="contradiction"),
])
def test_check_source_gives_the_reason_of_a_refused_record(key, value, expected):
    assert expected in check_source("pods", message(key, value), NOW)[3]
