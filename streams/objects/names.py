"""Kubernetes name rules (apimachinery ``util/validation``): object names, label keys and values.

Each check returns None for a valid value or the reason it is not, worded like
the API server's message so users recognise it.
"""

import re

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63


def dns1123_subdomain_error(value: str) -> str | None:
    """Object names (Pod, Node, ConfigMap, ...): lowercase RFC 1123 subdomain, at most 253 characters."""
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        return (
            "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.', "
            "starting and ending with an alphanumeric character (e.g. 'example.com')"
        )
    return None


def dns1123_label_error(value: str) -> str | None:
    """Namespace names: lowercase RFC 1123 label, at most 63 characters."""
    if len(value) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters"
    if not _DNS1123_LABEL_RE.match(value):
        return (
            "must be a lowercase RFC 1123 label: lower case alphanumeric characters or '-', "
            "starting and ending with an alphanumeric character (e.g. 'my-name')"
        )
    return None


def qualified_name_error(value: str) -> str | None:
    """Label and annotation keys, taint keys, resource names: ``[prefix/]name``."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if slash and prefix.count("/"):
        return "must be a qualified name: an optional DNS subdomain prefix and '/', then a name"
    if prefix and (reason := dns1123_subdomain_error(prefix)):
        return f"prefix part {reason}"
    if not name:
        return "name part must be non-empty"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"name part must be no more than {QUALIFIED_NAME_MAX} characters"
    if not _QUALIFIED_NAME_RE.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name', '123-abc')"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Label values and node-selector values: empty, or at most 63 alphanumerics, '-', '_', '.'."""
    if len(value) > LABEL_VALUE_MAX:
        return f"must be no more than {LABEL_VALUE_MAX} characters"
    if not _LABEL_VALUE_RE.match(value):
        return (
            "a valid label value must be empty or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None
