"""A YARN application that holds containers (``YarnHold.java``): real allocations for the demo and the tests.

Hadoop's client jars ship no runnable application (the minicluster jar leaves out MapReduce's
ApplicationMaster and the distributed shell), so a 120-line unmanaged ApplicationMaster, compiled with
``javac`` against the cached jars on first use (``~/.cache/koordstream/hadoop-<version>-hold-<source hash>``), asks
the ResourceManager for containers, has the NodeManagers run ``sleep 3600`` in them, and keeps them running
until its standard input closes.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from streams import cache
from streams.yarn.jars import HADOOP_VERSION, JAVA_OPENS, check_prerequisites, yarn_libs

SOURCE = Path(__file__).with_name("YarnHold.java")
HELD = "KOORD-YARN-HELD"
RUNNING = "KOORD-YARN-RUNNING"


def hold_classes() -> Path:
    """The folder of the compiled ``YarnHold`` class."""
    libs = yarn_libs()
    javac = shutil.which("javac")

    def build(folder: Path) -> None:
        if not javac:
            raise RuntimeError("compiling the YARN test application needs javac (a JDK 17) on PATH")
        result = subprocess.run([javac, "-cp", f"{libs}/*", "-d", str(folder), str(SOURCE)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"javac {SOURCE.name} failed:\n{result.stderr[-3000:]}")

    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return cache.build_once(f"hadoop-{HADOOP_VERSION}-hold-{digest}", build)


class Hold:
    """``containers`` running containers of ``memory_mb`` and ``vcores`` each, held while the object is open:
    ``container_ids`` and the NodeManager of each (``node_ids``, same order)."""

    def __init__(self, conf: Path, containers: int, memory_mb: int, vcores: int) -> None:
        java, _ = check_prerequisites()
        self.errors = tempfile.TemporaryFile(mode="w+")
        classes = hold_classes()
        self.process = subprocess.Popen(
            [java, "-Xmx128m", *JAVA_OPENS, "-cp", f"{conf}:{classes}:{yarn_libs()}/*", "YarnHold",
             str(containers), str(memory_mb), str(vcores)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True)
        self.container_ids: list[str] = []
        self.node_ids = self._wait_held()

    def _wait_held(self) -> list[str]:
        """The NodeManager of each container, once all run (the application gives up after 120 s)."""
        for line in self.process.stdout:
            if line.startswith(RUNNING):
                self.container_ids = line.split()[1:]
            if line.startswith(HELD):
                threading.Thread(target=self.process.stdout.read, daemon=True).start()  # its log, never blocking it
                return line.split()[1:]
        self.errors.seek(0)
        errors = [line.strip() for line in self.errors if "KOORD-YARN" in line]
        self.close()
        raise RuntimeError(f"the YARN hold application got no running containers (exit status "
                           f"{self.process.returncode}): {' '.join(errors)}")

    def close(self) -> None:
        self.errors.close()
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "Hold":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
