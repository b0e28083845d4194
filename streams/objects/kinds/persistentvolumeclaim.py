"""PersistentVolumeClaim (v1, namespaced): a pod's request for storage, and the volume bound to it.

Typed: ``spec.storageClassName`` (null when unset, which means the default class, and "" for no class: the
difference matters to binding), ``spec.accessModes``, ``spec.resources.requests.storage`` in bytes,
``spec.volumeMode``, ``spec.volumeName`` (the bound volume) and ``status.phase``. The scheduler's annotations
(``volume.kubernetes.io/selected-node``, ``pv.kubernetes.io/bind-completed``) are in the metadata.
"""

from streams.objects.fields import FieldReader
from streams.objects.kind import CORE_GROUP, KindSpec
from streams.objects.kinds.persistentvolume import VOLUME_MODES, access_modes


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    status = reader.mapping(body.get("status"), "status")
    resources = reader.mapping(spec.get("resources"), "spec.resources")
    requests = reader.resources(resources.get("requests"), "spec.resources.requests")
    class_name = spec.get("storageClassName")
    if class_name is not None and not isinstance(class_name, str):
        reader.fail("spec.storageClassName", "must be a string")
        class_name = None
    reader.mapping(spec.get("selector"), "spec.selector")
    return {
        "storageClassName": class_name,
        "accessModes": access_modes(reader, spec.get("accessModes"), "spec.accessModes"),
        "request": requests.get("storage", 0),
        "volumeMode": reader.enum(spec.get("volumeMode"), "spec.volumeMode", VOLUME_MODES) or "Filesystem",
        "volumeName": reader.string(spec.get("volumeName"), "spec.volumeName") or "",
        "phase": reader.string(status.get("phase"), "status.phase") or "Pending",
    }


SPEC = KindSpec(
    kind="PersistentVolumeClaim",
    groups=(CORE_GROUP,),
    schema="PersistentVolumeClaim",
    topic="persistentvolumeclaims",
    namespaced=True,
    plural="persistentvolumeclaims",
    short_names=("pvc",),
    convert=convert,
)
