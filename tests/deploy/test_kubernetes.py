"""deploy/kubernetes validates against the Kubernetes API schemas (kubernetes-validate, offline)."""

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from streams.cli import cli

MANIFESTS = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.37.0"
DOCUMENTS = [(path.name, i, doc) for path in sorted(MANIFESTS.glob("*.yaml"))
             for i, doc in enumerate(yaml.safe_load_all(path.read_text())) if doc]


@pytest.mark.parametrize("name, index, doc", DOCUMENTS, ids=[f"{n}-{i}-{d['kind']}" for n, i, d in DOCUMENTS])
def test_manifest_is_valid(name, index, doc):
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_an_invalid_manifest_is_caught():
    worker = next(doc for _, _, doc in DOCUMENTS if doc["kind"] == "Deployment")
    broken = {**worker, "spec": {**worker["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_node_agent_daemonset_has_the_host_access_it_needs():
    (daemonset,) = [doc for _, _, doc in DOCUMENTS if doc["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostNetwork"] and pod["hostPID"]
    assert pod["containers"][0]["securityContext"]["privileged"]
    assert {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v} == {
        "/sys/fs/cgroup", "/sys/fs/resctrl", "/var/lib/koordstream/node-agent"}


def test_every_container_runs_an_existing_koord_command():
    for _, _, doc in DOCUMENTS:
        template = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in template.get("containers", []):
            assert cli.get_command(None, container["args"][0]) is not None, f"{doc['metadata']['name']}: koord {container['args'][0]}"
