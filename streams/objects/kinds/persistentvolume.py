"""PersistentVolume (v1, cluster-scoped): a piece of storage, where it can be used and which claim holds it.

Typed: the fields kube-scheduler's volume plugins read (``spec.storageClassName``, ``spec.accessModes``,
``spec.capacity.storage`` in bytes (``storage``), ``spec.volumeMode``, ``spec.claimRef`` as "<namespace>/<name>",
``spec.csi.driver``, ``status.phase``); ``spec.nodeAffinity`` stays in the manifest, which VolumeBinding and
VolumeZone read. Checked as the API server checks those fields (``ValidatePersistentVolumeSpec``): access modes
from the four the API knows, ReadWriteOncePod not combined with another mode, a claimRef naming its claim.
"""

from streams.objects.fields import FieldReader, child
from streams.objects.kind import CORE_GROUP, KindSpec

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
VOLUME_MODES = ("Filesystem", "Block")


def access_modes(reader: FieldReader, value: object, path: str) -> list[str]:
    """``accessModes``: known modes, ReadWriteOncePod alone (``validateAccessModes``)."""
    modes = []
    for index, raw in enumerate(reader.sequence(value, path)):
        mode = reader.enum(raw, f"{path}[{index}]", ACCESS_MODES)
        if mode is not None and mode not in modes:
            modes.append(mode)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        reader.fail(path, "may not use ReadWriteOncePod with other access modes")
    return modes


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    claim = reader.mapping(spec.get("claimRef"), "spec.claimRef")
    claim_ref = None
    if claim:
        name = reader.string(claim.get("name"), "spec.claimRef.name", required=True)
        namespace = reader.string(claim.get("namespace"), "spec.claimRef.namespace") or "default"
        claim_ref = f"{namespace}/{name}" if name else None
    reader.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    csi = reader.mapping(spec.get("csi"), "spec.csi")
    capacity = reader.resources(spec.get("capacity"), "spec.capacity")
    return {
        "storageClassName": reader.string(spec.get("storageClassName"), "spec.storageClassName") or "",
        "accessModes": access_modes(reader, spec.get("accessModes"), "spec.accessModes"),
        "storage": capacity.get("storage", 0),
        "volumeMode": reader.enum(spec.get("volumeMode"), "spec.volumeMode", VOLUME_MODES) or "Filesystem",
        "claimRef": claim_ref,
        "csiDriver": reader.string(csi.get("driver"), child("spec.csi", "driver"), required=bool(csi)),
        "phase": reader.string(status.get("phase"), "status.phase") or "Pending",
    }


SPEC = KindSpec(
    kind="PersistentVolume",
    groups=(CORE_GROUP,),
    schema="PersistentVolume",
    topic="persistentvolumes",
    namespaced=False,
    plural="persistentvolumes",
    short_names=("pv",),
    convert=convert,
)
