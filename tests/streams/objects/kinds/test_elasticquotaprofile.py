"""ElasticQuotaProfile: the quota tree id and the node selector."""

import pytest

from streams.objects.kinds.elasticquotaprofile import fnv1a_64, quota_tree_id
from tests.streams.objects.support import SAMPLES, problems_of, record_of

PROFILE = (
    "apiVersion: quota.koordinator.sh/v1alpha1\nkind: ElasticQuotaProfile\n"
    "metadata: {{name: p, namespace: kube-system{labels}}}\nspec: {spec}\n"
)


@pytest.mark.parametrize(
    ("text", "digest"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("foobar", 0x85944171F73967E8)],
    ids=["empty", "a", "foobar"],
)
def test_fnv1a_64_reference_vectors(text, digest):
    assert fnv1a_64(text) == digest


def test_tree_id_is_generated_like_koordinator_without_the_label():
    record = record_of(SAMPLES["ElasticQuotaProfile"]).record
    assert record["quotaTreeId"] == quota_tree_id("kube-system", "amd64-profile")
    assert quota_tree_id("kube-system", "amd64-profile") == str(fnv1a_64("kube-system/amd64-profile"))
    assert record["nodeSelector"] == {"kubernetes.io/arch": "amd64"}


def test_tree_id_label_wins():
    text = PROFILE.format(
        labels=", labels: {quota.scheduling.koordinator.sh/tree-id: tree-7}",
        spec="{quotaName: root, nodeSelector: {matchLabels: {pool: a}}}",
    )
    assert record_of(text).record["quotaTreeId"] == "tree-7"


@pytest.mark.parametrize(
    ("spec", "problems"),
    [
        ("{nodeSelector: {matchLabels: {pool: a}}}", ["spec.quotaName: required"]),
        ("{quotaName: root}", ["spec.nodeSelector: required"]),
        (
            "{quotaName: root, nodeSelector: {matchExpressions: [{key: pool, operator: In, values: [a]}]}}",
            ["spec.nodeSelector.matchExpressions: not supported: select nodes with matchLabels"],
        ),
        ("{quotaName: Root Quota, nodeSelector: {}}", ['spec.quotaName: invalid name "Root Quota": must be a lowercase']),
    ],
    ids=["quota-name-missing", "selector-missing", "match-expressions", "quota-name-invalid"],
)
def test_invalid_profile(spec, problems):
    found = problems_of(PROFILE.format(labels="", spec=spec))
    assert len(found) == len(problems) and all(f.startswith(p) for f, p in zip(found, problems)), found
