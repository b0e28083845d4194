"""The embedded broker outlives a full disk under its log: it holds every topic in memory."""

from __future__ import annotations

import time

from streams.broker import embedded
from tests.integration.fullhome import fill, small_filesystem


def test_tansu_survives_a_full_disk_under_its_log(tmp_path):
    with small_filesystem(tmp_path / "home", "8m") as home:
        filler = fill(home)
        port = embedded.free_loopback_port()
        proc = embedded.start_tansu(port, home / "broker.log")
        try:
            embedded.wait_for_metadata(f"127.0.0.1:{port}", timeout=20, proc=proc)
            time.sleep(0.5)
            assert proc.poll() is None
            assert proc.log.writer.failing().startswith("No space left on device since ")
            filler.unlink()
            embedded.wait_for_metadata(f"127.0.0.1:{port}", timeout=20, proc=proc)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
