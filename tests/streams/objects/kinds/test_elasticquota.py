"""ElasticQuota: min and max."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of


def test_elastic_quota_min_max():
    record = record_of(SAMPLES["ElasticQuota"]).record
    assert (record["min"], record["max"]) == ({"cpu": 40000, "memory": 80 << 30}, {"cpu": 80000, "memory": 160 << 30})


@pytest.mark.parametrize("api_version", ["scheduling.sigs.k8s.io/v1alpha1", "scheduling.x-k8s.io/v1alpha1"])
def test_both_scheduler_plugins_groups_are_accepted(api_version):
    assert record_of(f"apiVersion: {api_version}\nkind: ElasticQuota\nmetadata: {{name: q}}\n").key == "default/q"


def test_min_above_max_is_refused():
    text = "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q}\nspec: {min: {cpu: 4}, max: {cpu: 2}}\n"
    assert problems_of(text) == ["spec.min.cpu: must be less than or equal to spec.max cpu"]
