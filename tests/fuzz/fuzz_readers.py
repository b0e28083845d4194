"""Coverage-guided fuzzing (atheris) of the readers of hostile bytes, beside the property tests.

Run by hand, not by pytest: ``.venv/bin/python tests/fuzz/fuzz_readers.py -runs=100000``. Each input is
split by its first byte into one reader: the codec, the manifest reader, the inbox reader (and, for a
record it reads, the clock check: a time past the bound is always refused). Any exception other than the
reader's own refusal is a crash that atheris reports with the input that caused it.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports():
    from streams.events import MAX_AHEAD_MS
    from streams.inbox import InboxReader, Rejected
    from streams.objects import ManifestError, load_and_validate
    from streams.schemas import codec
    from streams.topology import load_topology

READER = InboxReader.of(load_topology(), "inbox-scheduling")
NOW_MS = 1_700_000_000_000


def one_input(data: bytes) -> None:
    if not data:
        return
    choice, body = data[0] % 3, data[1:]
    if choice == 0:
        try:
            codec.decode(body)
        except codec.CodecError:
            pass
    elif choice == 1:
        try:
            load_and_validate("-", stdin_text=body.decode("utf-8", "replace"))
        except ManifestError:
            pass
    else:
        split = body[0] % 16 if body else 0
        message = types.SimpleNamespace(topic="koord.inbox.scheduling", partition=0, offset=0,
                                        key=body[1:1 + split] or None, value=body[1 + split:], timestamp=NOW_MS)
        try:
            _, event = READER.read(message)
        except Rejected:
            return
        if event.timestamp_ms > NOW_MS + 2 * MAX_AHEAD_MS:
            raise AssertionError(f"a record timed {event.timestamp_ms}, written at {NOW_MS}, was not refused")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
