"""Hadoop's jars and the JVM that runs them: one pinned release from Maven Central, cached outside the checkout.

The jars of one Hadoop release (``hadoop-client-minicluster``, whose shaded jar holds the
ResourceManager and NodeManager servers, with ``hadoop-client-api``/``-runtime``) come through ``mvn``
into ``~/.cache/koordstream/hadoop-<version>/libs`` (``KOORD_CACHE_DIR``) on first use, as the Kafka
jars do (``streams.broker.kraft``). The shaded jars leave out what Hadoop's own distribution adds
beside them, so the POM below adds it: reload4j and its SLF4J binding (the servers log through
log4j 1), BouncyCastle (the ResourceManager's proxy CA) and JAXB with javax.activation (dropped from
Java 11+, needed by the web services).
"""

from __future__ import annotations

import functools
from pathlib import Path

from streams.maven import java_and_maven, runtime_jars

HADOOP_VERSION = "3.4.1"
BOUNCYCASTLE_VERSION = "1.78.1"
"""BouncyCastle of that Hadoop release (``hadoop-project/pom.xml``)."""
RELOAD4J_VERSION = "1.2.22"
SLF4J_VERSION = "1.7.36"

RUNTIME_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.koordstream</groupId><artifactId>yarn-runtime</artifactId><version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-minicluster</artifactId>
      <version>{HADOOP_VERSION}</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId>
      <version>{RELOAD4J_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>{SLF4J_VERSION}</version></dependency>
    <dependency><groupId>org.bouncycastle</groupId><artifactId>bcpkix-jdk18on</artifactId>
      <version>{BOUNCYCASTLE_VERSION}</version></dependency>
    <dependency><groupId>javax.xml.bind</groupId><artifactId>jaxb-api</artifactId><version>2.2.11</version></dependency>
    <dependency><groupId>com.sun.xml.bind</groupId><artifactId>jaxb-impl</artifactId><version>2.2.3-1</version></dependency>
    <dependency><groupId>javax.activation</groupId><artifactId>javax.activation-api</artifactId>
      <version>1.2.0</version></dependency>
  </dependencies>
</project>
"""

JAVA_OPENS = tuple(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in (
    "java.lang", "java.lang.reflect", "java.util", "java.util.concurrent", "java.io", "java.net", "sun.nio.ch"))
"""Hadoop 3.4 on Java 17: Guice's cglib defines classes through ``ClassLoader.defineClass``."""

@functools.cache
def check_prerequisites() -> tuple[str, str]:
    """Paths of ``java`` (17 or newer) and ``mvn``, or ``MissingPrerequisite`` naming what is missing."""
    return java_and_maven("the local YARN")


@functools.cache
def yarn_libs() -> Path:
    """The folder of Hadoop's jars, fetched with Maven on first use (``streams.cache``)."""
    _, mvn = check_prerequisites()
    return runtime_jars(mvn, f"hadoop-{HADOOP_VERSION}", RUNTIME_POM, f"Hadoop {HADOOP_VERSION}")


def java_command(conf: Path, main: str, heap: str, *args: str) -> list[str]:
    """A JVM running ``main`` with ``conf`` (its ``*-site.xml`` and log4j file) first on the class path."""
    java, _ = check_prerequisites()
    return [java, heap, "-XX:TieredStopAtLevel=1", *JAVA_OPENS, "-cp", f"{conf}:{yarn_libs()}/*", main, *args]


