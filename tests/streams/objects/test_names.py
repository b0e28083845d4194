"""Kubernetes name rules."""

import pytest

from streams.objects.names import dns1123_label_error, dns1123_subdomain_error, label_value_error, qualified_name_error

CASES = [
    (dns1123_subdomain_error, "web-1", True),
    (dns1123_subdomain_error, "node-1.example.com", True),
    (dns1123_subdomain_error, "a" * 253, True),
    (dns1123_subdomain_error, "a" * 254, False),
    (dns1123_subdomain_error, "Web-1", False),
    (dns1123_subdomain_error, "web_1", False),
    (dns1123_subdomain_error, "-web", False),
    (dns1123_subdomain_error, "web.", False),
    (dns1123_label_error, "kube-system", True),
    (dns1123_label_error, "a" * 64, False),
    (dns1123_label_error, "a.b", False),
    (qualified_name_error, "app", True),
    (qualified_name_error, "kubernetes.io/arch", True),
    (qualified_name_error, "koordinator.sh/gpu-memory-ratio", True),
    (qualified_name_error, "My_Name.v2", True),
    (qualified_name_error, "/arch", False),
    (qualified_name_error, "a/b/c", False),
    (qualified_name_error, "Example.COM/x", False),
    (qualified_name_error, "a b", False),
    (qualified_name_error, "x" * 64, False),
    (label_value_error, "", True),
    (label_value_error, "amd64", True),
    (label_value_error, "SingleNUMANode", True),
    (label_value_error, "amd64 // node", False),
    (label_value_error, "-x", False),
    (label_value_error, "x" * 64, False),
]


@pytest.mark.parametrize(
    ("check", "value", "valid"), CASES, ids=[f"{check.__name__}-{value[:20]!r}-{valid}" for check, value, valid in CASES]
)
def test_name_rules(check, value, valid):
    assert (check(value) is None) == valid
