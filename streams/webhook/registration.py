"""The MutatingWebhookConfiguration and ValidatingWebhookConfiguration that send requests to ``koord webhook``.

Chosen so a stopped webhook never blocks the cluster's own pods:

- **Mutating, pods on CREATE**: ``failurePolicy: Ignore``, ``timeoutSeconds: 5``, and a namespaceSelector
  excluding ``kube-system``, ``kube-public``, ``kube-node-lease`` and ``koordinator-system`` by their
  ``kubernetes.io/metadata.name`` label (set on every namespace by the API server). While the webhook is
  down, pods are admitted un-onboarded (on cpu/memory as written) rather than refused. Koordinator ships
  ``Fail`` with a ``control-plane DoesNotExist`` selector, which blocks every pod of an unlabelled
  cluster when its webhook is down; Ignore trades that for pods that miss onboarding during an outage.
- **Mutating, nodes/status on UPDATE** (the resource amplification, ``streams.webhook.nodestatus``):
  ``failurePolicy: Ignore``, ``timeoutSeconds: 2``, narrowed by ``matchConditions`` to nodes carrying the
  amplification-ratio or raw-allocatable annotation, so kubelets of other nodes never wait for it. While
  the webhook is down a kubelet's update goes through un-amplified (allocatable shows the raw cpu until the
  next update the webhook sees), never refused; a hung webhook delays one status update by at most 2 s,
  far below the node-monitor grace period (and the node lease, which keeps the node Ready, is another
  resource). Koordinator registers it with ``failurePolicy=ignore`` too.
- **Validating, Koordinator's custom resources** (ElasticQuota, ElasticQuotaProfile, Reservation,
  PodMigrationJob, Device, ClusterColocationProfile): ``failurePolicy: Fail``, 5 s: while the webhook is
  down these objects cannot change, so none enters unchecked; no system component depends on them.
- **Validating, the slo-controller-config ConfigMap**: ``Fail``, narrowed by a ``matchConditions`` CEL
  expression to that one ConfigMap, so no other ConfigMap ever waits for the webhook.
- **Validating, gang pods**: ``Ignore``, narrowed to pods carrying a gang annotation, with the same
  namespace exclusion as the mutating hook.
"""

from __future__ import annotations

import base64

from streams.koordinator.annotations import ANNOTATION_RAW_ALLOCATABLE, ANNOTATION_RESOURCE_AMPLIFICATION_RATIO
from streams.koordinator.colocationprofile import API_GROUP as PROFILE_GROUP, PLURAL as PROFILE_PLURAL
from streams.koordinator.labels import GANG_PREFIX
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE

NAME = "koordstream"
"""Name of both configurations."""
TIMEOUT_S = 5
NODE_STATUS_TIMEOUT_S = 2
"""A kubelet's status update waits at most this long for a hung webhook."""
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", CONFIG_NAMESPACE)
ADMISSION_REGISTRATION = "/apis/admissionregistration.k8s.io/v1"
NOT_SYSTEM = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                    "values": list(SYSTEM_NAMESPACES)}]}

CUSTOM_RESOURCES = {
    "scheduling.sigs.k8s.io": ["elasticquotas"],
    "quota.koordinator.sh": ["elasticquotaprofiles"],
    "scheduling.koordinator.sh": ["reservations", "podmigrationjobs", "devices"],
    PROFILE_GROUP: [PROFILE_PLURAL],
}


def client_config(base: str | None, service: tuple[str, str, int] | None, path: str, ca_bundle: bytes) -> dict:
    """``url: <base><path>`` (the API server reaches the webhook directly, e.g. https://127.0.0.1:9443) or
    ``service`` (namespace, name, port) in a cluster."""
    config: dict = {"caBundle": base64.b64encode(ca_bundle).decode()}
    if service:
        config["service"] = {"namespace": service[0], "name": service[1], "port": service[2], "path": path}
    else:
        config["url"] = f"{base}{path}"
    return config


def _hook(name: str, config: dict, rules: list[dict], failure: str, **extra) -> dict:
    return {"name": name, "clientConfig": config, "rules": rules, "failurePolicy": failure,
            "timeoutSeconds": TIMEOUT_S, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "matchPolicy": "Equivalent", **extra}


def mutating(base: str | None, service: tuple[str, str, int] | None, ca_bundle: bytes) -> dict:
    config = client_config(base, service, "/mutate", ca_bundle)
    pods = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"],
             "scope": "Namespaced"}]
    node_status = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes/status"],
                    "scope": "Cluster"}]
    amplified = (f"has(object.metadata.annotations) && "
                 f"('{ANNOTATION_RESOURCE_AMPLIFICATION_RATIO}' in object.metadata.annotations || "
                 f"'{ANNOTATION_RAW_ALLOCATABLE}' in object.metadata.annotations)")
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [_hook("colocation-profile.pods.koordstream.io", config, pods, "Ignore",
                               namespaceSelector=NOT_SYSTEM, reinvocationPolicy="Never"),
                         {**_hook("resource-amplification.nodes.koordstream.io", config, node_status, "Ignore",
                                  matchConditions=[{"name": "amplified", "expression": amplified}],
                                  reinvocationPolicy="Never"),
                          "timeoutSeconds": NODE_STATUS_TIMEOUT_S}]}


def validating(base: str | None, service: tuple[str, str, int] | None, ca_bundle: bytes) -> dict:
    config = client_config(base, service, "/validate", ca_bundle)
    custom = [{"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE"],
               "resources": resources, "scope": "*"} for group, resources in CUSTOM_RESOURCES.items()]
    configmaps = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["configmaps"], "scope": "Namespaced"}]
    pods = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"],
             "scope": "Namespaced"}]
    slo_config = (f"object.metadata.name == '{CONFIG_NAME}' && "
                  f"object.metadata.namespace == '{CONFIG_NAMESPACE}'")
    gang = (f"has(object.metadata.annotations) && "
            f"object.metadata.annotations.exists(k, k.startsWith('{GANG_PREFIX}'))")
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [
                _hook("objects.koordstream.io", config, custom, "Fail"),
                _hook("slo-config.koordstream.io", config, configmaps, "Fail",
                      matchConditions=[{"name": "slo-controller-config", "expression": slo_config}]),
                _hook("gang.pods.koordstream.io", config, pods, "Ignore", namespaceSelector=NOT_SYSTEM,
                      matchConditions=[{"name": "gang-annotated", "expression": gang}]),
            ]}


def path_of(configuration: dict) -> str:
    plural = {"MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
              "ValidatingWebhookConfiguration": "validatingwebhookconfigurations"}[configuration["kind"]]
    return f"{ADMISSION_REGISTRATION}/{plural}"
