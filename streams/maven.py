"""The Java programs the project runs beside itself (Apache Kafka, Hadoop YARN): a JVM, and their jars from
Maven Central fetched with ``mvn`` into the cache (``streams.cache``) on first use."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from streams import cache

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


class MissingPrerequisite(RuntimeError):
    """Java 17 or Maven is not installed: what needs them cannot run here."""


def java_and_maven(needed_by: str, otherwise: str = "") -> tuple[str, str]:
    """Paths of ``java`` (17 or newer) and ``mvn``, or :class:`MissingPrerequisite` saying that ``needed_by``
    needs what is missing (and ``otherwise``, what to do instead)."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    missing = [name for name, path in (("Java 17 (java)", java), ("Maven (mvn)", mvn)) if not path]
    if missing:
        raise MissingPrerequisite(
            f"{needed_by} needs {' and '.join(missing)} on PATH: install them "
            f"(Debian: apt-get install openjdk-17-jre-headless maven){otherwise}")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', version)
    if not match or int(match.group(1)) < 17:
        raise MissingPrerequisite(f"{needed_by} needs Java 17 or newer; {java} is: {version.strip()}")
    return java, mvn


def runtime_jars(mvn: str, entry: str, pom: str, what: str,
                 beside: Callable[[Path], None] = lambda home: None) -> Path:
    """The folder of the runtime jars ``pom`` depends on, in the cache entry ``entry``; ``beside`` writes what
    else the entry holds (a logging configuration)."""

    def fetch(home: Path) -> None:
        (home / "pom.xml").write_text(pom)
        libs = home / "libs"
        shutil.rmtree(libs, ignore_errors=True)
        result = subprocess.run(
            [mvn, "-B", "-q", "-f", str(home / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={libs}"],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"mvn could not fetch {what}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        beside(home)

    return cache.build_once(entry, fetch) / "libs"
