"""``koord apply`` and the record size limit, on a real broker: an oversized document anywhere in the
input applies nothing and is reported by file, line and field, never with a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streams import limits
from streams.broker import local
from streams.cli.apply import ACK_HEADERS
from streams.objects import load_and_validate
from streams.schemas import codec
from streams.topology import load_topology
from tests.streams.end_offsets import record_count

pytestmark = pytest.mark.integration
TOPOLOGY = load_topology()
SOURCES = [TOPOLOGY.names()[topic] for topic in ("nodes", "pods")]


def node_yaml(name: str) -> str:
    return (f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n"
            "status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}\n")


def pod_yaml(name: str, hostname_bytes: int = 3) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  hostname: {'h' * hostname_bytes}\n"
            "  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]\n")


def pod_record_size(hostname_bytes: int) -> int:
    [record] = load_and_validate("-", stdin_text=pod_yaml("edge", hostname_bytes))
    return limits.record_size(record.key, codec.encode(record.schema, record.record), ACK_HEADERS)


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    with local.start(broker_kind, tmp_path_factory.mktemp(f"apply-size-{broker_kind}"), TOPOLOGY) as started:
        yield started


@pytest.fixture
def koord(broker, tmp_path):
    env = {**os.environ, **broker.env(), "KOORD_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True,
                              env=env, timeout=120)
    return run


def first_line(documents: list[str], index: int) -> int:
    """The line where ``documents[index]`` starts once they are joined with ``---`` lines."""
    return 1 + sum(text.count("\n") + 1 for text in documents[:index])


def produced(broker) -> int:
    return record_count(broker.bootstrap, *SOURCES)


def refused(result: subprocess.CompletedProcess, expected: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert expected in result.stderr, result.stderr


@pytest.mark.parametrize("position", [0, 2, 4], ids=["first", "middle", "last"])
def test_an_oversized_pod_anywhere_in_a_file_applies_nothing(broker, koord, tmp_path, position):
    documents = [node_yaml("size-node"), pod_yaml("a"), pod_yaml("b"), pod_yaml("c")]
    documents.insert(position, pod_yaml("big", hostname_bytes=1_100_000))
    path = tmp_path / "objects.yaml"
    path.write_text("---\n".join(documents))
    line = first_line(documents, position)
    before = produced(broker)

    refused(koord("apply", "-f", str(path)),
            f"Error: {path}:{line}: document {position} (Pod default/big): spec.hostname: 1,100,002 bytes; "
            f"record is 1,100,")
    assert "over the 1,044,480-byte limit of a record" in koord("apply", "-f", str(path)).stderr
    assert produced(broker) == before

    path.write_text("---\n".join(d for i, d in enumerate(documents) if i != position))
    applied = koord("apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    assert produced(broker) == before + 4


def test_an_oversized_pod_in_the_second_file_of_a_directory_applies_the_first_file_neither(broker, koord, tmp_path):
    (tmp_path / "a-nodes.yaml").write_text(node_yaml("dir-node"))
    pods = [pod_yaml("ok"), pod_yaml("big", hostname_bytes=2_000_000)]
    (tmp_path / "b-pods.yaml").write_text("---\n".join(pods))
    before = produced(broker)

    refused(koord("apply", "-f", str(tmp_path)),
            f"{tmp_path / 'b-pods.yaml'}:{first_line(pods, 1)}: document 2 (Pod default/big)")
    assert produced(broker) == before


def test_a_ten_megabyte_document_is_a_clean_error(broker, koord, tmp_path):
    path = tmp_path / "huge.yaml"
    documents = [node_yaml("huge-node"), pod_yaml("huge", hostname_bytes=10_000_000)]
    path.write_text("---\n".join(documents))
    before = produced(broker)

    refused(koord("apply", "-f", str(path)),
            f"{path}:{first_line(documents, 1)}: document 1 (Pod default/huge): spec.hostname: 10,000,002 bytes")
    assert produced(broker) == before


def test_a_pod_at_the_limit_applies_and_one_byte_more_applies_nothing(broker, koord, tmp_path):
    hostname = 1_000_000 + limits.RECORD_MAX_BYTES - pod_record_size(1_000_000)
    assert pod_record_size(hostname) == limits.RECORD_MAX_BYTES
    path = tmp_path / "edge.yaml"
    before = produced(broker)

    path.write_text(pod_yaml("edge", hostname + 1))
    refused(koord("apply", "-f", str(path)), "record is 1,044,481 bytes, over the 1,044,480-byte limit of a record")
    assert produced(broker) == before

    path.write_text(pod_yaml("edge", hostname))
    applied = koord("apply", "-f", str(path))
    assert (applied.returncode, applied.stdout) == (0, "pod/default/edge applied\n"), applied.stderr
    assert produced(broker) == before + 1
