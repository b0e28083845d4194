"""``koord delete KIND NAME [-n NAMESPACE]``: the topic and key whose tombstone deletes the object.

KIND is matched like kubectl matches it: case-insensitively, by kind, plural
or short name (``pods``, ``po``, ``cm``, ``eq``, ...). A namespace given for a
cluster-scoped kind is ignored, as kubectl ignores it.
"""

from streams.objects import names
from streams.objects.errors import ManifestError
from streams.objects.kinds import lookup, supported


def parse_delete_target(kind: str, name: str, namespace: str | None = None) -> tuple[str, str]:
    """(topic, key) of the object; ManifestError for an unknown kind or an invalid name."""
    spec = lookup(kind)
    if spec is None:
        raise ManifestError(f'kind "{kind}" is not supported (supported: {supported()})')
    if reason := names.dns1123_subdomain_error(name):
        raise ManifestError(f'{spec.kind} name "{name}": {reason}')
    if not spec.namespaced:
        return spec.topic, spec.key(None, name)
    namespace = namespace or spec.default_namespace
    if reason := names.dns1123_label_error(namespace):
        raise ManifestError(f'namespace "{namespace}": {reason}')
    return spec.topic, spec.key(namespace, name)
