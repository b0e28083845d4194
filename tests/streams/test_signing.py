"""``streams.signing``: what the pipeline writes verifies, on its topic only, with its key only; anything else
is refused with a reason; the key of a home is made once, private, and a replay never makes one."""

from __future__ import annotations

import stat
import types

import pytest

from streams.inbox import InboxReader, Rejected
from streams.schemas import codec
from streams.settings import Settings
from streams.signing import HEADER, Signer, signer
from streams.topology import load_topology
from tests.streams.replay.inbox import SCHEDULING_INBOX, pod, records

SIGNER = Signer(b"k" * 32, "test")


def test_a_signed_record_verifies_on_its_topic_only():
    header = [SIGNER.header("decisions", b"ns/a", b"value")]
    assert SIGNER.problem("decisions", b"ns/a", b"value", header) is None
    assert SIGNER.problem("decisions", b"ns/b", b"value", header) is not None
    assert SIGNER.problem("decisions", b"ns/a", b"other", header) is not None
    assert SIGNER.problem("noderesources", b"ns/a", b"value", header) is not None
    assert Signer(b"x" * 32, "other").problem("decisions", b"ns/a", b"value", header).endswith(
        "or its workers do not share one KOORD_RECORD_KEY")


def test_a_deletion_and_an_empty_value_sign_differently():
    assert SIGNER.mac("decisions", b"k", None) != SIGNER.mac("decisions", b"k", b"")
    assert SIGNER.problem("decisions", b"k", None, {HEADER: SIGNER.mac("decisions", b"k", None)}) is None


def test_key_and_value_boundaries_cannot_be_moved():
    assert SIGNER.mac("decisions", b"ab", b"c") != SIGNER.mac("decisions", b"a", b"bc")


def test_an_unsigned_record_is_refused_naming_the_topic():
    assert SIGNER.problem("inbox-scheduling", b"default", b"v", None) == (
        "the record has no koord-mac header: only the pipeline writes inbox-scheduling")


def test_the_inbox_reader_takes_signed_records_and_refuses_others():
    reader = InboxReader.of(load_topology(), "inbox-scheduling", "inc-1", SIGNER)
    record = records(SCHEDULING_INBOX, "default", pod("a"))[0]
    signed = types.SimpleNamespace(**{**vars(record), "headers": [SIGNER.header("inbox-scheduling", record.key,
                                                                                  record.value)]})
    assert reader.read(signed)[1].key == "default/a"
    with pytest.raises(Rejected, match="no koord-mac header"):
        reader.read(types.SimpleNamespace(**{**vars(record), "headers": []}))
    moved = types.SimpleNamespace(**{**vars(signed), "key": b"tree-a"})
    with pytest.raises(Rejected, match="does not verify"):
        reader.read(moved)


def test_a_home_gets_one_private_key_and_a_replay_makes_none(tmp_path):
    settings = Settings(home=tmp_path / "home")
    assert signer(settings, create=False) is None
    first = signer(settings)
    assert first is not None and len(first.secret) == 32
    assert stat.S_IMODE((tmp_path / "home" / "record.key").stat().st_mode) == 0o600
    assert signer(settings).secret == first.secret == signer(settings, create=False).secret
    assert signer(Settings(home=tmp_path / "home", record_key="shared")).secret == b"shared"


def test_no_key_and_an_empty_key_sign_differently():
    assert SIGNER.mac("decisions", None, b"v") != SIGNER.mac("decisions", b"", b"v")


def test_a_verified_record_is_not_validated_again_an_unverified_one_is():
    """The router checked what it signed; a replay of a recording from another home (no key) checks it all."""
    record = records(SCHEDULING_INBOX, "default", pod("a"))[0]
    _, envelope = codec.decode(record.value)
    kind, pod_record = codec.decode(envelope["payload"])
    pod_record["requests"]["cpu"] = -1
    value = codec.encode("InboxEvent", {**envelope, "payload": codec.encode(kind, pod_record)})
    header = SIGNER.header("inbox-scheduling", record.key, value)
    bad = types.SimpleNamespace(**{**vars(record), "value": value, "headers": [header]})
    assert InboxReader.of(load_topology(), "inbox-scheduling", "inc-1", SIGNER).read(bad)[1].record == pod_record
    with pytest.raises(Rejected, match="requests.cpu: quantity must not be negative"):
        InboxReader.of(load_topology(), "inbox-scheduling", "inc-1").read(bad)
