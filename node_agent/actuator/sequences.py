"""The last applied sequence per (targetKind, targetId, mechanism), kept across restarts.

Stored as JSON in ``<state dir>/actuation-sequences.json``, replaced atomically
(write a temporary file, fsync, rename), so a crash leaves either the old or
the new file. At most ``capacity`` targets are remembered (pods come and go);
when one is forgotten its sequence raises ``floor``, and an actuation for a
target not remembered must be above the floor. Sequences are per node and
increase with every actuation, so forgetting never lets an old one back in.
``highest`` is the largest sequence ever applied on this node, whatever the
target: the verifier bounds how far an unsigned actuation may jump past it.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "actuation-sequences.json"
DEFAULT_CAPACITY = 65_536


def target_key(kind: str, target_id: str, mechanism: str) -> str:
    return json.dumps([kind, target_id, mechanism], separators=(",", ":"))


class SequenceStore:
    def __init__(self, state_dir: Path | None, capacity: int = DEFAULT_CAPACITY, persist: bool = True) -> None:
        """``state_dir`` None keeps the sequences in memory only (tests); ``persist`` False reads the
        stored ones and never writes them (dry runs)."""
        self.path = None if state_dir is None else state_dir / FILE_NAME
        self.persist = persist
        self.capacity = capacity
        self.floor = -1
        self.highest = -1
        self._last: OrderedDict[str, int] = OrderedDict()
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            doc = json.loads(self.path.read_text())
            self.floor = int(doc.get("floor", -1))
            self._last = OrderedDict((str(k), int(v)) for k, v in doc.get("last", []))
            self.highest = int(doc.get("highest", max([self.floor, *self._last.values()])))
        except (OSError, ValueError, TypeError, AttributeError) as err:
            # A damaged file must not let old actuations in: refuse to start rather than forget.
            raise RuntimeError(f"cannot read the applied sequences in {self.path}: {err}") from err

    def last(self, key: str) -> int:
        """The last applied sequence for ``key``, or the floor when the target is not remembered."""
        return self._last.get(key, self.floor)

    def remembers(self, key: str) -> bool:
        return key in self._last

    def reset(self) -> None:
        """Forget every sequence and the floor (persisted): the actuations topic they came from is gone."""
        self._last.clear()
        self.floor = self.highest = -1
        self._save()

    def record(self, key: str, sequence: int) -> None:
        self._last.pop(key, None)
        self._last[key] = sequence
        self.highest = max(self.highest, sequence)
        while len(self._last) > self.capacity:
            _, forgotten = self._last.popitem(last=False)
            self.floor = max(self.floor, forgotten)
        self._save()

    def _save(self) -> None:
        if self.path is None or not self.persist:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as file:
            json.dump({"floor": self.floor, "highest": self.highest, "last": list(self._last.items())}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
