"""Loading files, directories and stdin: positions, streams, Lists, JSON, and syntax errors."""

import json
import textwrap

import pytest

from streams.objects import Document, ManifestError, load_documents

PODS_YAML = """\
# two pods and an empty document
apiVersion: v1
kind: Pod
metadata: {name: a}
---
---
# comment only
---
apiVersion: v1
kind: Pod
metadata: {name: b}
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_multi_document_yaml_keeps_file_index_and_line(tmp_path):
    path = write(tmp_path, "pods.yaml", PODS_YAML)
    docs = load_documents(path)
    assert [(d.file, d.index, d.line, d.body["metadata"]["name"]) for d in docs] == [
        (str(path), 0, 2, "a"),
        (str(path), 1, 9, "b"),
    ]
    assert docs[1].location == f"{path}:9"


def test_directory_reads_manifest_files_in_name_order_not_recursively(tmp_path):
    write(tmp_path, "b.yml", "kind: B\n")
    write(tmp_path, "a.yaml", "kind: A1\n---\nkind: A2\n")
    write(tmp_path, "c.json", '{"kind": "C"}')
    write(tmp_path, "notes.txt", "kind: Ignored\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path, "sub/d.yaml", "kind: Nested\n")
    docs = load_documents(tmp_path)
    assert [(d.body["kind"], d.index) for d in docs] == [("A1", 0), ("A2", 1), ("B", 2), ("C", 3)]
    assert [d.file.rsplit("/", 1)[-1] for d in docs] == ["a.yaml", "a.yaml", "b.yml", "c.json"]


def test_empty_directory_has_no_documents(tmp_path):
    assert load_documents(tmp_path) == []


def test_stdin_text_is_read_as_a_stream():
    docs = load_documents("-", stdin_text="kind: A\n---\nkind: B\n")
    assert docs == [Document("<stdin>", 0, 1, {"kind": "A"}), Document("<stdin>", 1, 3, {"kind": "B"})]


def test_yaml_list_stands_for_its_items_with_their_lines():
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: List
        items:
        - kind: Node
          metadata: {name: n1}
        - kind: Node
          metadata: {name: n2}
        """
    )
    docs = load_documents("-", stdin_text=text)
    assert [(d.index, d.line, d.body["metadata"]["name"]) for d in docs] == [(0, 4, "n1"), (1, 6, "n2")]


def test_json_object_list_and_concatenated_objects_with_lines():
    listed = {"apiVersion": "v1", "kind": "PodList", "items": [{"kind": "Pod", "n": 1}, {"kind": "Pod", "n": 2}]}
    text = json.dumps({"kind": "Node"}) + "\n" + json.dumps(listed, indent=2)
    docs = load_documents("-", stdin_text=text)
    assert [(d.line, d.body) for d in docs] == [
        (1, {"kind": "Node"}),
        (6, {"kind": "Pod", "n": 1}),
        (10, {"kind": "Pod", "n": 2}),
    ]


def test_timestamps_stay_strings_as_in_json():
    (doc,) = load_documents("-", stdin_text="status:\n  updateTime: 2024-05-01T10:00:00Z\n  day: 2024-05-01\n")
    assert doc.body["status"] == {"updateTime": "2024-05-01T10:00:00Z", "day": "2024-05-01"}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.yaml", "kind: Pod\nmetadata:\n  name: a\n   bad: indent\n", r"^{path}:4: YAML syntax error: mapping values are not allowed here$"),
        ("dup.yaml", "kind: Pod\nmetadata:\n  name: a\n  name: b\n", r'^{path}:4: YAML syntax error: duplicate key "name"$'),
        ("tab.yaml", "kind: Pod\n\tname: a\n", r"^{path}:2: YAML syntax error: found character '\\t' that cannot start any token$"),
        ("bad.json", '{"kind": "Pod",\n "metadata": }', r"^{path}:2: JSON syntax error: Expecting value \(column 14\)$"),
        ("dup.json", '{"kind": "Pod"}\n{"kind": "Pod", "kind": "Node"}', r'^{path}:2: duplicate key "kind" in the object starting here$'),
    ],
    ids=["yaml-indent", "yaml-duplicate-key", "yaml-tab", "json-syntax", "json-duplicate-key"],
)
def test_syntax_errors_name_file_and_line(tmp_path, name, text, expected):
    path = write(tmp_path, name, text)
    with pytest.raises(ManifestError, match=expected.format(path=str(path).replace(".", r"\."))):
        load_documents(path)


def test_every_broken_file_of_a_directory_is_reported(tmp_path):
    write(tmp_path, "a.yaml", "a: [\n")
    write(tmp_path, "b.yaml", "kind: Pod\n")
    write(tmp_path, "c.yaml", "c: {\n")
    with pytest.raises(ManifestError) as caught:
        load_documents(tmp_path)
    assert [problem.split(":")[0].rsplit("/", 1)[-1] for problem in caught.value.problems] == ["a.yaml", "c.yaml"]


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(ManifestError, match="no such file or directory"):
        load_documents(tmp_path / "absent.yaml")


def test_non_utf8_file_is_an_error(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"kind: Pod\nname: caf\xe9\n")
    with pytest.raises(ManifestError, match="not UTF-8 text"):
        load_documents(path)


DEPTH = 5_000_000
"""Levels of nesting of a 10 MB file of brackets."""


@pytest.mark.parametrize("name, text", [
    ("deep.yaml", "a: " + "[" * DEPTH + "]" * DEPTH + "\n"),
    ("deep.json", '{"a": ' + "[" * DEPTH + "]" * DEPTH + "}"),
], ids=["yaml", "json"])
def test_a_ten_megabyte_nest_is_a_manifest_error(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ManifestError, match=rf"^{path}: nested too deeply to read"):
        load_documents(path)


@pytest.mark.parametrize("text", [
    '{"kind": "Pod", "metadata": {"generation": ' + "9" * 5000 + "}}",
    "kind: Pod\nmetadata: {generation: " + "9" * 5000 + "}\n",
], ids=["json", "yaml"])
def test_an_integer_of_thousands_of_digits_is_a_manifest_error(text):
    with pytest.raises(ManifestError, match=r"^<stdin>: a number has more than 4,300 digits$"):
        load_documents("-", stdin_text=text)
