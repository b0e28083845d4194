"""Documents to records: identity (topic, key, schema), the manifest, messages, and all-or-nothing apply."""

import json
import textwrap

import pytest
import yaml

from streams.objects import ManifestError, ObjectRecord, load_and_validate
from streams.schemas import codec
from tests.streams.objects.support import SAMPLES, problems_of, record_of

SUPPORTED = ("CSINode, ConfigMap, DeschedulerConfiguration, Device, ElasticQuota, ElasticQuotaProfile, KubeSchedulerConfiguration, "
             "Node, NodeMetric, NodeResourceTopology, PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, "
             "PodGroup, PodMigrationJob, Reservation, StorageClass")


@pytest.mark.parametrize(
    ("kind", "topic", "key"),
    [
        ("Node", "nodes", "node-1"),
        ("Pod", "pods", "shop/web-1"),
        ("NodeMetric", "nodemetrics", "node-1"),
        ("ConfigMap", "configs", "koordinator-system/slo-controller-config"),
        ("ElasticQuota", "quotas", "team-a/team-a"),
        ("ElasticQuotaProfile", "quotas", "kube-system/amd64-profile"),
        ("Reservation", "reservations", "reserve-gpu"),
        ("Device", "devices", "node-1"),
        ("NodeResourceTopology", "noderesourcetopologies", "node-1"),
    ],
    ids=lambda value: value if value[0].isupper() else "",
)
def test_each_kind_has_its_schema_topic_and_key(kind, topic, key):
    record = record_of(SAMPLES[kind])
    assert (record.kind, record.schema, record.topic, record.key) == (kind, kind, topic, key)


def test_manifest_is_the_whole_document_as_compact_sorted_json():
    record = record_of(SAMPLES["Pod"])
    manifest = record.record["manifest"]
    assert json.loads(manifest) == yaml.safe_load(textwrap.dedent(SAMPLES["Pod"]))
    assert manifest == json.dumps(json.loads(manifest), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert manifest.startswith('{"apiVersion":"v1","kind":"Pod","metadata":{')


def test_metadata_record():
    assert record_of(SAMPLES["Pod"]).record["metadata"] == {
        "name": "web-1",
        "namespace": "shop",
        "uid": "6f1d6c1e-0000-4000-8000-000000000001",
        "labels": {"koordinator.sh/qosClass": "LS"},
        "annotations": {"scheduling.koordinator.sh/resource-spec": '{"preferredCPUBindPolicy":"SpreadByPCPUs"}'},
        "generation": 0,
    }


@pytest.mark.parametrize(
    ("text", "key", "namespace"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n", "default/a", "default"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "default/c", "default"),
        ("apiVersion: v1\nkind: Node\nmetadata: {name: n, namespace: ignored}\n", "n", None),
    ],
    ids=["pod-default-namespace", "configmap-default-namespace", "cluster-scoped-drops-namespace"],
)
def test_namespace_defaults_and_cluster_scope(text, key, namespace):
    record = record_of(text)
    assert (record.key, record.record["metadata"]["namespace"]) == (key, namespace)
    assert json.loads(record.record["manifest"]) == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "metadata.name: required"),
        ("apiVersion: v1\nkind: Pod\n", "metadata: required"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\n",
            "metadata.name: required (generateName is not supported: objects are keyed by name)",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\n", 'metadata.name: invalid name "Web_1": must be a lowercase RFC 1123 subdomain'),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: 7}\n", "metadata.name: must be a string, got number 7"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: My.NS}\n", 'metadata.namespace: invalid namespace "My.NS"'),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a, annotations: {replicas: 3}}\n",
            "metadata.annotations.replicas: must be a string, got number 3 (quote it)",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {tier: true}}\n",
            "metadata.labels.tier: must be a string, got boolean true (quote it)",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {tier: a b}}\n", 'metadata.labels.tier: invalid value "a b": a valid label value'),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {/tier: x}}\n", "metadata.labels[/tier]: invalid key: prefix part must be non-empty"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a, generation: -1}\n", "metadata.generation: must be between 0 and"),
        ("apiVersion: v1\nkind: Pod\nmetadata: [a]\n", "metadata: must be an object, got list"),
        ("apiVersion: apps/v1\nkind: Pod\nmetadata: {name: a}\n", 'apiVersion: "apps/v1" is not a version of Pod (expected v1)'),
        ("apiVersion: v2\nkind: Pod\nmetadata: {name: a}\n", 'apiVersion: "v2" is not a version of Pod (expected v1)'),
        ("kind: Pod\nmetadata: {name: a}\n", "apiVersion: null is not a version of Pod (expected v1)"),
        (
            "apiVersion: scheduling.sigs.k8s.io/1\nkind: ElasticQuota\nmetadata: {name: a}\n",
            'apiVersion: "scheduling.sigs.k8s.io/1" is not a version of ElasticQuota '
            "(expected scheduling.sigs.k8s.io/<version> or scheduling.x-k8s.io/<version>)",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {x: {1: one}}\n", "spec.x: key 1 must be a string (quote it)"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {x: .nan}\n", "spec.x: must be a finite number, got nan"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {x: !!binary aGk=}\n", "spec.x: a bytes value cannot be represented in JSON"),
    ],
    ids=[
        "name-missing",
        "metadata-missing",
        "generate-name",
        "name-not-dns-subdomain",
        "name-not-string",
        "namespace-not-dns-label",
        "annotation-not-string",
        "label-not-string",
        "label-value-invalid",
        "label-key-invalid",
        "generation-negative",
        "metadata-not-object",
        "api-version-wrong-group",
        "api-version-core-not-v1",
        "api-version-missing",
        "api-version-malformed-version",
        "non-string-key",
        "nan",
        "binary",
    ],
)
def test_invalid_documents_name_field_and_reason(text, problem):
    problems = problems_of(text)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_every_problem_of_a_document_is_reported():
    text = """
        apiVersion: v1
        kind: Pod
        metadata: {name: web-1, labels: {a: 1}}
        spec:
          priority: high
          containers:
          - resources: {requests: {cpu: "-1", memory: lots}}
    """
    assert problems_of(text) == [
        "metadata.labels.a: must be a string, got number 1 (quote it)",
        'spec.containers[0].resources.requests.cpu: quantity must not be negative: "-1"',
        'spec.containers[0].resources.requests.memory: not a valid quantity: "lots"',
        'spec.priority: must be an integer, got string "high"',
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
            f'<stdin>:1: document 0: kind "Deployment" is not supported (supported: {SUPPORTED})',
        ),
        (
            "apiVersion: v1\nkind: pod\n",
            f'<stdin>:1: document 0: kind "pod" is not supported (supported: {SUPPORTED}); did you mean "Pod"?',
        ),
        ("apiVersion: v1\nmetadata: {name: a}\n", f"<stdin>:1: document 0: kind: required (supported: {SUPPORTED})"),
        ("apiVersion: v1\nkind: [Pod]\n", "<stdin>:1: document 0: kind: must be a string, got list"),
        ("- a\n- b\n", "<stdin>:1: document 0: must be an object with apiVersion and kind, got list"),
        ("just text\n", "<stdin>:1: document 0: must be an object with apiVersion and kind, got string"),
    ],
    ids=["unsupported", "wrong-case-hint", "kind-missing", "kind-not-string", "list-document", "scalar-document"],
)
def test_kind_problems(text, message):
    with pytest.raises(ManifestError) as caught:
        record_of(text)
    assert caught.value.problems == (message,)


def test_message_names_file_line_document_object_and_field(tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: v1
            kind: Pod
            metadata: {name: web-0}
            ---
            apiVersion: v1
            kind: Node
            metadata: {name: node-1}
            ---
            # the broken one
            apiVersion: v1
            kind: Pod
            metadata: {name: web-1}
            spec:
              containers:
              - name: app
                resources:
                  requests: {cpu: "-1"}
            """
        )
    )
    with pytest.raises(ManifestError) as caught:
        load_and_validate(path)
    assert str(caught.value) == (
        f"{path}:10: document 2 (Pod default/web-1): "
        'spec.containers[0].resources.requests.cpu: quantity must not be negative: "-1"'
    )


def test_load_and_validate_applies_nothing_and_lists_every_bad_document(tmp_path):
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\n---\nkind: Deployment\n")
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: Bad_Name}\n")
    with pytest.raises(ManifestError) as caught:
        load_and_validate(tmp_path)
    assert [problem.split(": ", 1)[1][:40] for problem in caught.value.problems] == [
        'document 1: kind "Deployment" is not sup',
        "document 2 (Node Bad_Name): metadata.nam",
    ]


def test_load_and_validate_returns_records_in_input_order(tmp_path):
    (tmp_path / "objects.yaml").write_text("\n---\n".join(textwrap.dedent(SAMPLES[kind]) for kind in ("Node", "Pod")))
    records = load_and_validate(tmp_path / "objects.yaml")
    assert [(r.kind, r.key) for r in records] == [("Node", "node-1"), ("Pod", "shop/web-1")]
    assert all(isinstance(r, ObjectRecord) for r in records)


def test_load_and_validate_reads_stdin():
    records = load_and_validate("-", stdin_text="apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    assert [r.key for r in records] == ["n"]


def test_nothing_to_apply_is_an_error(tmp_path):
    (tmp_path / "empty.yaml").write_text("# nothing here\n")
    with pytest.raises(ManifestError, match="no objects to apply"):
        load_and_validate(tmp_path / "empty.yaml")


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_kind_record_encodes_with_the_codec(kind):
    record = record_of(SAMPLES[kind])
    assert codec.decode(codec.encode(record.schema, record.record)) == (record.schema, record.record)
