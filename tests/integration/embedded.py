"""Running ``koord`` as a user does against a ``koord up`` of its own (its own KOORD_HOME and broker)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


def fresh_env(home: Path) -> dict[str, str]:
    """The test process's environment without any KOORD_ setting, with ``home`` as KOORD_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOORD_")}
    env["KOORD_HOME"] = str(home)
    return env


def koord(env: dict[str, str], *args: str, check: bool = True, input_text: str | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "streams.cli", *args], capture_output=True, text=True,
                            env=env, timeout=timeout, input=input_text)
    if check and result.returncode != 0:
        raise AssertionError(f"koord {' '.join(args)}: {result.stdout}\n{result.stderr}")
    return result


def koord_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(koord(env, *args, "-o", "json").stdout)


def read_model_rows(env: dict[str, str], sql: str) -> list[tuple]:
    """Rows of ``sql`` on the up's SQLite read model (none before the projection created it)."""
    database = os.path.join(env["KOORD_HOME"], "readmodel.sqlite")
    if not os.path.exists(database):
        return []
    with sqlite3.connect(database) as connection:
        try:
            return connection.execute(sql).fetchall()
        except sqlite3.OperationalError:
            return []
