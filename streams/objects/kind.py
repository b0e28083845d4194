"""What every supported kind declares: its API groups, record schema, topic, scope, names and converter.

A kind's converter reads the typed fields the pipeline computes on and leaves
everything else to the lossless ``manifest``. It validates what it reads, as
the API server (or Koordinator's webhook) would for those fields, and nothing
else: fields koordstream does not read are kept, not judged.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from streams.objects.fields import FieldReader

CORE_GROUP = ""
"""The group of ``apiVersion: v1`` (Pod, Node, ConfigMap)."""

_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")

Converter = Callable[[FieldReader, dict, dict], dict]
"""(reader, whole document, its ObjectMeta record) -> the record's typed fields."""


@dataclass(frozen=True)
class KindSpec:
    """A supported kind."""

    kind: str
    groups: tuple[str, ...]
    """API groups accepted in ``apiVersion``, at any well-formed version (v1alpha1, v1beta2, v1, ...).

    The core group ("") is accepted only as ``v1``.
    """
    schema: str
    """Avro record name in streams/schemas."""
    topic: str
    """Topology id of the source topic (see deploy/topics.yaml), e.g. ``pods``."""
    namespaced: bool
    plural: str
    short_names: tuple[str, ...]
    convert: Converter
    default_namespace: str = "default"
    default_name: str | None = None
    """Name given to a document without ``metadata.name`` (configuration files that have no metadata)."""
    """Namespace of a namespaced object that names none, as ``kubectl apply`` without ``-n``."""

    def accepts(self, api_version: str) -> bool:
        """Whether ``api_version`` is one of this kind's groups at a well-formed version."""
        group, _, version = api_version.rpartition("/")
        if group == CORE_GROUP:
            return CORE_GROUP in self.groups and version == "v1"
        return group in self.groups and bool(_VERSION.match(version))

    def expected_api_versions(self) -> str:
        return " or ".join(f"{group}/<version>" if group else "v1" for group in self.groups)

    def key(self, namespace: str | None, name: str) -> str:
        """The Kafka key: "<namespace>/<name>", or "<name>" for cluster-scoped kinds."""
        return f"{namespace}/{name}" if self.namespaced else name
