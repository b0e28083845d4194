"""``koord delete KIND NAME``: topic and key from kubectl-style kind names."""

import pytest

from streams.objects import ManifestError, parse_delete_target


@pytest.mark.parametrize(
    ("kind", "name", "namespace", "target"),
    [
        ("pod", "web-1", None, ("pods", "default/web-1")),
        ("Pods", "web-1", "shop", ("pods", "shop/web-1")),
        ("po", "web-1", "shop", ("pods", "shop/web-1")),
        ("nodes", "node-1", None, ("nodes", "node-1")),
        ("no", "node-1", "shop", ("nodes", "node-1")),
        ("cm", "slo-controller-config", "koordinator-system", ("configs", "koordinator-system/slo-controller-config")),
        ("configmaps", "c", None, ("configs", "default/c")),
        ("eq", "team-a", "team-a", ("quotas", "team-a/team-a")),
        ("ElasticQuotas", "team-a", None, ("quotas", "default/team-a")),
        ("eqp", "amd64-profile", "kube-system", ("quotas", "kube-system/amd64-profile")),
        ("nodemetric", "node-1", None, ("nodemetrics", "node-1")),
        ("reservations", "r", None, ("reservations", "r")),
        ("DEVICE", "node-1", None, ("devices", "node-1")),
    ],
    ids=lambda value: str(value),
)
def test_delete_target(kind, name, namespace, target):
    assert parse_delete_target(kind, name, namespace) == target


@pytest.mark.parametrize(
    ("kind", "name", "namespace", "message"),
    [
        ("deployment", "d", None, 'kind "deployment" is not supported (supported: CSINode, ConfigMap, DeschedulerConfiguration, Device, '),
        ("pod", "Web_1", None, 'Pod name "Web_1": must be a lowercase RFC 1123 subdomain'),
        ("pod", "web-1", "Shop", 'namespace "Shop": must be a lowercase RFC 1123 label'),
    ],
    ids=["unknown-kind", "bad-name", "bad-namespace"],
)
def test_delete_target_errors(kind, name, namespace, message):
    with pytest.raises(ManifestError) as caught:
        parse_delete_target(kind, name, namespace)
    assert str(caught.value).startswith(message)
