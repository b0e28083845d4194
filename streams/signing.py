"""Signatures of the records only the pipeline writes, so that a record anyone else wrote cannot pass for one.

The readers of some topics act on what a record claims about its writer: an inbox record's source offset
moves its aggregate's dedupe and its domain makes a scheduling domain; a decision places a pod in the node
aggregate and the read model. On Kafka the project's ACLs let only the worker write those topics; on the
embedded broker anyone who reaches its port can. So the pipeline signs what it writes there, and those
readers refuse (dead-letter) a record without a good signature, whatever the broker:

    koord-mac = HMAC-SHA256(secret, topic id ‖ 0x00 ‖ len(key) as 4 bytes ‖ key ‖ value)

``topic id`` is the topology id (``inbox-scheduling``, ``decisions``), so a record signed for one topic does
not verify on another; no key is signed as the length 0xFFFFFFFF, which no key has; a deletion (no value) is
signed as the 0x00 byte, a value as 0x01 followed by it.

The secret is ``KOORD_RECORD_KEY`` (``Settings.record_key``), else the file ``KOORD_HOME/record.key``, which
the first worker of a home creates (32 random bytes, mode 0600). Every worker and replay of one deployment
needs the same secret: several hosts share it through ``KOORD_RECORD_KEY`` (deploy/ sets it from a Secret);
a record signed with another secret is refused with a reason that says so. ``koord replay`` verifies with the
secret of the home it runs in and, where it has none, reads records unverified, as they were recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from streams.settings import Settings, env_name

HEADER = "koord-mac"
NO_KEY = b"\xff\xff\xff\xff"
KEY_FILE = "record.key"
PIPELINE_SOURCES = ("decisions", "noderesources", "nodeusages")
"""Source topics (topology ids) that only the worker writes: their readers (the bridge, the read model) take only
signed records of them, and the router reads none (``routing.COPIED_BY_AGGREGATES``)."""
SIGNED_OUTPUTS = (*PIPELINE_SOURCES, "quotastatus", "reservations", "podmigrationjobs", "podgroups")
"""Topics (topology ids) whose records the pipeline signs: those only it writes, and the statuses the bridge
writes back to the cluster (on the reservations, jobs and podgroups topics, which users and the bridge write too, the
signature is what tells the pipeline's status from an object as applied)."""

Headers = Mapping[str, bytes | None] | Iterable[tuple[str | bytes, bytes | None]] | None


@dataclasses.dataclass(frozen=True)
class Signer:
    """Signs and verifies records with one deployment's secret."""

    secret: bytes = dataclasses.field(repr=False)
    origin: str
    """Where the secret came from, for messages: the variable or the file."""

    def mac(self, topic_id: str, key: bytes | None, value: bytes | None) -> bytes:
        digest = hmac.new(self.secret, digestmod=hashlib.sha256)
        length = NO_KEY if key is None else len(key).to_bytes(4, "big")
        digest.update(b"%s\x00%s%s" % (topic_id.encode(), length, key or b""))
        digest.update(b"\x00" if value is None else b"\x01")
        if value is not None:
            digest.update(value)
        return digest.digest()

    def header(self, topic_id: str, key: bytes | None, value: bytes | None) -> tuple[str, bytes]:
        """The ``koord-mac`` header of a record the pipeline writes to ``topic_id``."""
        return HEADER, self.mac(topic_id, key, value)

    def problem(self, topic_id: str, key: bytes | None, value: bytes | None, headers: Headers) -> str | None:
        """Why the record read from ``topic_id`` is not one the pipeline wrote, or None when it is."""
        found = signature_of(headers)
        if found is None:
            return f"the record has no {HEADER} header: only the pipeline writes {topic_id}"
        if not hmac.compare_digest(found, self.mac(topic_id, key, value)):
            return (f"the record's {HEADER} does not verify with the record key of {self.origin}: it was not "
                    f"written by this pipeline, or its workers do not share one {KEY_ENV}")
        return None


KEY_ENV = env_name(Settings, "record_key")


def signature_of(headers: Headers) -> bytes | None:
    items = headers.items() if isinstance(headers, Mapping) else headers or ()
    for name, value in items:
        if (name.decode("utf-8", "replace") if isinstance(name, bytes) else name) == HEADER:
            return value
    return None


def signer(settings: Settings | None = None, create: bool = True) -> Signer | None:
    """The deployment's signer: from ``KOORD_RECORD_KEY``, else ``KOORD_HOME/record.key``, which is created
    when missing if ``create`` (a worker); None when there is neither and ``create`` is false (a replay of a
    recording from another home)."""
    settings = settings or Settings.from_env()
    if settings.record_key:
        return Signer(settings.record_key.encode(), KEY_ENV)
    path = settings.home / KEY_FILE
    if create and not path.exists():
        _create(path)
    try:
        return Signer(path.read_bytes(), str(path))
    except FileNotFoundError:
        return None


def _create(path: Path) -> None:
    """Write 32 random bytes to ``path`` (mode 0600) unless another process did first: each writes a file of
    its own and links it into place, so every process of the home reads the one that won."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:
        raise OSError(error.errno, f"cannot create the record key {path}: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(os.urandom(32))
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink(missing_ok=True)
