"""Every YAML example of Koordinator's release articles (``tests/fixtures/seeds``) loads unchanged; every
supported one converts or fails for a stated reason.

The articles show excerpts, so three kinds of outcome are expected:

- a supported object converts;
- an excerpt that leaves out ``metadata.name`` fails with exactly that one
  problem, and converts once it is given a name;
- an example that Kubernetes or Koordinator would refuse too is listed in
  KNOWN_INVALID with the problems we report and why.

Examples of kinds koordstream does not take (DaemonSet, ...) must fail with
the "not supported" message. KubeSchedulerConfiguration documents have no
metadata and take the kind's default name.
"""

import copy

import pytest

from streams.objects import ManifestError, load_documents, to_record
from streams.objects.documents import Document
from streams.objects.kinds import KINDS
from streams.schemas import codec
from tests.streams.objects.seeds import SeedBlock, load_block, seed_files

BLOCKS = [load_block(path) for path in seed_files()]
YAML_BLOCKS = [block for block in BLOCKS if not block.flattened]

KNOWN_INVALID = {
    # The v1.6 article's reservation-taints example elides the rest of the spec ("Other Reservation spec
    # fields as needed"); a Reservation needs a template and owners, as Koordinator's webhook says.
    ("001#15", 0): ["spec.template: required", "spec.owners: required"],
    # The article elides the node spec with "...", which YAML reads as the string "...".
    ("002#1", 0): ["spec: must be an object, got string"],
    # "//" is not a YAML comment: the label value and quota name keep the comment text.
    ("002#3", 0): [
        'spec.quotaName: invalid name "amd64-root-quota   // 匹配的 root quota 名称"',
        'spec.nodeSelector.matchLabels[kubernetes.io/arch]: invalid value "amd64 // 挑选 amd64 节点"',
    ],
    ("002#3", 1): [
        'spec.quotaName: invalid name "arm64-root-quota    // 匹配的 root quota 名称"',
        'spec.nodeSelector.matchLabels[kubernetes.io/arch]: invalid value "arm64  // 挑选 arm64 节点"',
    ],
    # An unquoted false is a boolean; the API server refuses non-string label values too.
    ("002#4", 0): ["metadata.labels[quota.scheduling.koordinator.sh/preemptible]: must be a string, got boolean false"],
}


def documents(block: SeedBlock) -> list[Document]:
    return load_documents("-", stdin_text=block.text)


def problems(doc: Document) -> list[str]:
    try:
        to_record(doc)
    except ManifestError as err:
        return [problem.split("): ", 1)[-1] for problem in err.problems]
    return []


def named(doc: Document) -> Document:
    body = copy.deepcopy(doc.body)
    body.setdefault("metadata", {})["name"] = "seed-example"
    return Document(doc.file, doc.index, doc.line, body)


def seed_documents() -> list[tuple[str, int, Document]]:
    return [(block.id, doc.index, doc) for block in YAML_BLOCKS for doc in documents(block)]


def has_name(doc: Document) -> bool:
    return bool((doc.body.get("metadata") or {}).get("name"))


SEED_DOCUMENTS = seed_documents()
SEED_IDS = [f"{block_id}-{index}" for block_id, index, _ in SEED_DOCUMENTS]
CONVERTIBLE = [
    (block_id, index, doc if has_name(doc) else named(doc))
    for block_id, index, doc in SEED_DOCUMENTS
    if doc.body.get("kind") in KINDS and (block_id, index) not in KNOWN_INVALID
]


def test_seeds_hold_the_expected_examples():
    kinds = sorted({str(doc.body.get("kind")) for _, _, doc in SEED_DOCUMENTS})
    assert (len(BLOCKS), len(YAML_BLOCKS), len(SEED_DOCUMENTS), len(CONVERTIBLE)) == (33, 28, 29, 22)
    assert kinds == [
        "ConfigMap",
        "DaemonSet",
        "Device",
        "ElasticQuotaProfile",
        "KubeSchedulerConfiguration",
        "Node",
        "None",
        "Pod",
        "Reservation",
    ]


def test_flattened_blocks_are_only_the_lossy_english_render():
    assert {block.seed for block in BLOCKS if block.flattened} == {"000"}


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda block: block.id)
def test_every_yaml_example_loads_unchanged(block):
    assert documents(block)


@pytest.mark.parametrize(("block_id", "index", "doc"), SEED_DOCUMENTS, ids=SEED_IDS)
def test_every_example_converts_or_fails_for_a_stated_reason(block_id, index, doc):
    kind = doc.body.get("kind")
    found = problems(doc)
    if (block_id, index) in KNOWN_INVALID:
        expected = KNOWN_INVALID[(block_id, index)]
        assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected)), found
    elif kind is None:
        assert found == [f"<stdin>:{doc.line}: document {index}: kind: required (supported: {', '.join(sorted(KINDS))})"]
    elif kind not in KINDS:
        assert len(found) == 1 and f'document {index}: kind "{kind}" is not supported' in found[0]
    elif not has_name(doc) and KINDS[kind].default_name is None:
        assert found == ["metadata.name: required"]
        assert problems(named(doc)) == []
    else:
        assert found == []


@pytest.mark.parametrize("doc", [doc for _, _, doc in CONVERTIBLE], ids=[f"{b}-{i}" for b, i, _ in CONVERTIBLE])
def test_every_converted_example_encodes(doc):
    record = to_record(doc)
    assert codec.decode(codec.encode(record.schema, record.record)) == (record.schema, record.record)
