"""The manifest reader on hostile input: whatever the text or bytes, ``load_and_validate`` returns records or
raises ManifestError whose every line names the source (and the line, for a problem of one document);
no other exception reaches ``koord apply``."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from streams.objects import ManifestError, load_and_validate
from streams.objects.kinds import KINDS

STDIN_LABEL = "<stdin>"
FRAGMENTS = ["apiVersion: v1\n", "kind: Pod\n", "kind: List\n", "items:\n", "metadata:\n", "  name: x\n",
             "  namespace: y\n", "spec:\n", "  containers:\n", "  - name: c\n", "    resources: {requests: {cpu: ",
             "-1", "1e400", ".nan", "}}\n", "---\n", "- ", "{", "}", "[", "]", ": ", ", ", "&a ", "*a ", "*b ",
             "!!binary ", "!!python/object:os.system ", "!!set ", "<<: ", "%YAML 1.1\n", "? ", "|\n", "\t", "\"",
             "'", "#", "\\u0000", "\x00", "\ufeff", "\r\n", "\n", "~", "null", "true", "0x1F", "2020-01-01"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12)
KINDED = st.fixed_dictionaries(
    {"apiVersion": st.sampled_from(["v1", "slo.koordinator.sh/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1",
                                    "config.koordinator.sh/v1alpha1", "kubescheduler.config.k8s.io/v1", ""]) | JSON_VALUES,
     "kind": st.sampled_from([*KINDS, "List", "PodList"]) | JSON_VALUES},
    optional={"metadata": st.fixed_dictionaries({}, optional={"name": JSON_VALUES | st.text(max_size=10),
                                                              "namespace": JSON_VALUES, "labels": JSON_VALUES}),
              "spec": JSON_VALUES, "status": JSON_VALUES, "data": JSON_VALUES, "items": JSON_VALUES})


def _only_manifest_errors(source: str, text: str | None = None) -> None:
    try:
        records = load_and_validate(source, stdin_text=text)
    except ManifestError as error:
        label = STDIN_LABEL if source == "-" else source
        assert error.problems
        for problem in error.problems:
            assert problem.startswith(label), problem
            if re.search(r": document \d+", problem):
                assert re.match(rf"^{re.escape(label)}:\d+: document \d+", problem), problem
        return
    assert records and all(record.key and record.topic for record in records)


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=30).map("".join))
def test_arbitrary_yaml_text_gives_records_or_a_located_manifest_error(text):
    _only_manifest_errors("-", text)


@given(st.lists(KINDED, min_size=1, max_size=3))
def test_structured_documents_of_every_kind_give_records_or_a_located_manifest_error(bodies):
    _only_manifest_errors("-", yaml.safe_dump_all(bodies))
    _only_manifest_errors("-", "\n".join(json.dumps(body) for body in bodies))


@given(st.binary(max_size=300))
def test_arbitrary_file_bytes_give_records_or_a_located_manifest_error(data):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "hostile.yaml"
        path.write_bytes(data)
        _only_manifest_errors(str(path))


NESTING = 5000


@pytest.mark.parametrize("text", [
    pytest.param("a: " + "[" * NESTING + "]" * NESTING, id="yaml-flow"),
    pytest.param('{"a": ' + "[" * NESTING + "]" * NESTING + "}", id="json"),
])
def test_deep_nesting_is_a_manifest_error(text):
    with pytest.raises(ManifestError):
        load_and_validate("-", stdin_text=text)
    _only_manifest_errors("-", text)


def test_an_integer_of_thousands_of_digits_is_a_manifest_error():
    text = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "generation": '
            + "9" * 5000 + "}}")
    with pytest.raises(ManifestError):
        load_and_validate("-", stdin_text=text)
    _only_manifest_errors("-", text)
