"""Archive the current version of a schema: ``python -m streams.schemas.archive NAME...``.

Writes ``history/<NAME>.v<N+1>.avsc``, the current schema with its
sub-records inlined, when its fingerprint differs from the latest archived
version. Run it after changing a schema; the evolution tests then check that
every older version still reads.
"""

from __future__ import annotations

import json
import re
import sys

from streams.schemas import codec


def archive(name: str) -> str | None:
    if name not in codec.SCHEMAS:
        raise SystemExit(f"{name} is not a top-level schema (sub-records are archived inside their parents)")
    named = {f"{codec.NAMESPACE}.{p.stem}": json.loads(p.read_text()) for p in codec.SCHEMA_DIR.glob("*.avsc")}
    inlined = codec._inline(named[f"{codec.NAMESPACE}.{name}"], named, set())
    versions = sorted(int(re.search(r"\.v(\d+)\.avsc$", p.name).group(1)) for p in codec.HISTORY_DIR.glob(f"{name}.v*.avsc"))
    if versions:
        latest = json.loads((codec.HISTORY_DIR / f"{name}.v{versions[-1]}.avsc").read_text())
        if codec._parse(latest, codec.HISTORY_DIR)[1] == codec._parse(inlined, codec.HISTORY_DIR)[1]:
            return None
    path = codec.HISTORY_DIR / f"{name}.v{(versions[-1] if versions else 0) + 1}.avsc"
    path.write_text(json.dumps(inlined, indent=2) + "\n")
    return path.name


if __name__ == "__main__":
    for schema_name in sys.argv[1:]:
        print(archive(schema_name) or f"{schema_name}: unchanged")
