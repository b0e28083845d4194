"""ConfigMap: string data."""

import pytest

from tests.streams.objects.support import SAMPLES, problems_of, record_of


def test_configmap_data():
    assert record_of(SAMPLES["ConfigMap"]).record["data"] == {
        "colocation-config": '{"enable": true}',
        "resource-threshold-config": '{"clusterStrategy": {"enable": true}}',
    }


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("{enable: true}", "data.enable: must be a string, got boolean true (quote it)"),
        ("{ratio: 1.5}", "data.ratio: must be a string, got number 1.5 (quote it)"),
        ("{a/b: x}", "data[a/b]: invalid key: must consist of alphanumeric characters, '-', '_' or '.'"),
        ("[a, b]", "data: must be an object, got list"),
    ],
    ids=["bool-value", "number-value", "key-with-slash", "data-list"],
)
def test_configmap_data_must_be_strings(data, problem):
    assert problems_of(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata: {data}\n") == [problem]


def test_configmap_over_one_mebibyte_is_refused():
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata: {{big: '{'x' * (1 << 20)}'}}\n"
    assert problems_of(text) == ["data: too long: 1048579 bytes, must have at most 1048576"]
