"""The size check of an apply: a record over the limit is a problem of its document, with its heaviest field."""

import pytest

from streams import limits
from streams.objects import ManifestError, load_and_validate
from streams.objects.size import heaviest_field
from streams.schemas import codec

ACK = [("koord-ack", b"1")]


@pytest.mark.parametrize("body, expected", [
    pytest.param({"metadata": {"name": "a"}, "spec": {"hostname": "h" * 1000}}, ("spec.hostname", 1002), id="leaf"),
    pytest.param({"a": {"x": "x" * 100, "y": "y" * 100}}, ("a", 215), id="no-child-dominates"),
    pytest.param({"items": ["i" * 10] * 3 + ["j" * 500]}, ("items[3]", 502), id="list-item"),
    pytest.param({"metadata": {"annotations": {"example.com/blob": "b" * 800}}},
                 ("metadata.annotations[example.com/blob]", 802), id="dotted-key"),
    pytest.param({"a": "x", "b": "y"}, ("", 17), id="flat"),
])
def test_heaviest_field(body, expected):
    assert heaviest_field(body) == expected


def _pod(name: str, hostname_bytes: int) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  hostname: {'h' * hostname_bytes}\n"
            "  containers: [{name: c, image: nginx}]\n")


def test_an_oversized_document_is_reported_beside_every_other_bad_one_and_nothing_is_returned():
    text = "---\n".join([_pod("ok", 3), _pod("big", 1_100_000), "apiVersion: v1\nkind: Pod\nmetadata: {}\n"])
    with pytest.raises(ManifestError) as caught:
        load_and_validate("-", stdin_text=text, headers=ACK)
    big, invalid = caught.value.problems
    assert big.startswith("<stdin>:8: document 1 (Pod default/big): spec.hostname: 1,100,002 bytes; record is 1,100,")
    assert big.endswith(f"bytes, over the {limits.RECORD_MAX_BYTES:,}-byte limit of a record")
    assert invalid.startswith("<stdin>:15: document 2 (Pod): metadata.name: required")


def _record_size(hostname_bytes: int) -> int:
    [record] = load_and_validate("-", stdin_text=_pod("edge", hostname_bytes))
    return limits.record_size(record.key, codec.encode(record.schema, record.record))


def test_the_headers_count_towards_the_size():
    hostname = 1_000_000 + limits.RECORD_MAX_BYTES - _record_size(1_000_000)
    assert _record_size(hostname) == limits.RECORD_MAX_BYTES
    with pytest.raises(ManifestError, match="record is 1,044,492 bytes, over the 1,044,480-byte limit"):
        load_and_validate("-", stdin_text=_pod("edge", hostname), headers=ACK)
