"""StorageClass (storage.k8s.io/v1, cluster-scoped): how claims of the class are provisioned and bound.

Typed: ``provisioner`` (required, as the API server requires it) and ``volumeBindingMode`` (Immediate when
unset, the API server's default); ``allowedTopologies`` stays in the manifest, which VolumeBinding reads for
WaitForFirstConsumer claims that need provisioning.
"""

from streams.objects.fields import FieldReader
from streams.objects.kind import KindSpec

BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    reader.sequence(body.get("allowedTopologies"), "allowedTopologies")
    return {
        "provisioner": reader.string(body.get("provisioner"), "provisioner", required=True) or "",
        "volumeBindingMode": reader.enum(body.get("volumeBindingMode"), "volumeBindingMode",
                                         BINDING_MODES) or "Immediate",
    }


SPEC = KindSpec(
    kind="StorageClass",
    groups=("storage.k8s.io",),
    schema="StorageClass",
    topic="storageclasses",
    namespaced=False,
    plural="storageclasses",
    short_names=("sc",),
    convert=convert,
)
