"""The registry of supported kinds: one literal dict, kind -> KindSpec, and lookup by any of its names.

Adding a kind: write ``kinds/<kind>.py`` with ``convert`` and ``SPEC``, add its
Avro schema under streams/schemas, and list it here.
"""

from streams.objects.kind import KindSpec
from streams.objects.kinds import (
    configmap,
    csinode,
    deschedulerconfiguration,
    device,
    elasticquota,
    elasticquotaprofile,
    kubeschedulerconfiguration,
    node,
    nodemetric,
    noderesourcetopology,
    persistentvolume,
    persistentvolumeclaim,
    pod,
    poddisruptionbudget,
    podgroup,
    podmigrationjob,
    reservation,
    storageclass,
)

KINDS: dict[str, KindSpec] = {
    "Node": node.SPEC,
    "Pod": pod.SPEC,
    "NodeMetric": nodemetric.SPEC,
    "ConfigMap": configmap.SPEC,
    "ElasticQuota": elasticquota.SPEC,
    "ElasticQuotaProfile": elasticquotaprofile.SPEC,
    "Reservation": reservation.SPEC,
    "Device": device.SPEC,
    "NodeResourceTopology": noderesourcetopology.SPEC,
    "KubeSchedulerConfiguration": kubeschedulerconfiguration.SPEC,
    "PodGroup": podgroup.SPEC,
    "PodMigrationJob": podmigrationjob.SPEC,
    "DeschedulerConfiguration": deschedulerconfiguration.SPEC,
    "PodDisruptionBudget": poddisruptionbudget.SPEC,
    "PersistentVolume": persistentvolume.SPEC,
    "PersistentVolumeClaim": persistentvolumeclaim.SPEC,
    "StorageClass": storageclass.SPEC,
    "CSINode": csinode.SPEC,
}


def _aliases() -> dict[str, KindSpec]:
    """Lower-case kind, singular, plural and short names -> spec, as ``kubectl`` resolves them."""
    aliases: dict[str, KindSpec] = {}
    for spec in KINDS.values():
        for alias in (spec.kind.lower(), spec.plural, *spec.short_names):
            if alias in aliases and aliases[alias] is not spec:
                raise ValueError(f"kind alias {alias!r} names both {aliases[alias].kind} and {spec.kind}")
            aliases[alias] = spec
    return aliases


_ALIASES = _aliases()


def lookup(name: str) -> KindSpec | None:
    """The kind ``name`` refers to, case-insensitively: "Pod", "pods", "po"; None when unsupported."""
    return _ALIASES.get(name.lower())


def supported() -> str:
    """The supported kinds, for messages."""
    return ", ".join(sorted(KINDS))
