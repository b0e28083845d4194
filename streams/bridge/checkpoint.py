"""Where each watch resumes, and the version of every object produced: a small SQLite file under KOORD_HOME.

For each watched resource it keeps the collection resourceVersion of the last event produced (the
watch resumes from it) and, per object key, the resourceVersion last produced. A relist (first start,
or a 410 Gone) compares the list with these: objects at a new version are produced, objects at the
version already produced are not, and keys that are gone get a tombstone, so a deletion missed while
the bridge was down still reaches the topics. Both are written in one transaction after the broker
acknowledged the records (acks=all), so a crash between the two re-produces at most the last batch
(the same resourceVersions again), never skips one. The file is written ahead (WAL) without a sync per
commit, which held the bridge's event loop for every watch batch: a commit lost to a host crash is that same
case, the last batch produced again. Evictions a PodDisruptionBudget refused are kept
here too until they succeed or no longer apply.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path


class Checkpoint:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.executescript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            "CREATE TABLE IF NOT EXISTS cursors (resource TEXT PRIMARY KEY, version TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS objects (resource TEXT, key TEXT, version TEXT NOT NULL,"
            " PRIMARY KEY (resource, key));"
            "CREATE TABLE IF NOT EXISTS refused_evictions (decision_id TEXT PRIMARY KEY, record TEXT NOT NULL);")

    def cursor(self, resource: str) -> str | None:
        row = self._db.execute("SELECT version FROM cursors WHERE resource = ?", (resource,)).fetchone()
        return row[0] if row else None

    def known(self, resource: str) -> dict[str, str]:
        """key -> resourceVersion last produced, for the live objects of ``resource``."""
        return dict(self._db.execute("SELECT key, version FROM objects WHERE resource = ?", (resource,)))

    def commit(self, resource: str, version: str | None, produced: Mapping[str, str],
               deleted: Iterable[str] = ()) -> None:
        """Record a batch the broker acknowledged: ``produced`` key -> version, ``deleted`` keys, the cursor."""
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?)",
                                 [(resource, key, v) for key, v in produced.items()])
            self._db.executemany("DELETE FROM objects WHERE resource = ? AND key = ?",
                                 [(resource, key) for key in deleted])
            if version is not None:
                self._db.execute("INSERT OR REPLACE INTO cursors VALUES (?, ?)", (resource, version))

    def forget_cursor(self, resource: str) -> None:
        """After a 410 Gone: the next start of the watch relists."""
        with self._db:
            self._db.execute("DELETE FROM cursors WHERE resource = ?", (resource,))

    def refuse_eviction(self, decision_id: str, record: dict) -> None:
        """Keep an Eviction a PodDisruptionBudget refused (429), to be tried again, across restarts too."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO refused_evictions VALUES (?, ?)",
                             (decision_id, json.dumps(record)))

    def refused_evictions(self) -> list[dict]:
        return [json.loads(row[0]) for row in self._db.execute("SELECT record FROM refused_evictions")]

    def settle_eviction(self, decision_id: str) -> None:
        with self._db:
            self._db.execute("DELETE FROM refused_evictions WHERE decision_id = ?", (decision_id,))

    def close(self) -> None:
        self._db.close()
