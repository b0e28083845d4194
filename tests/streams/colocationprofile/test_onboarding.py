"""``koord apply`` honours ClusterColocationProfiles: kept in the home, onboarding the pods applied with or after
them the way ``koord webhook`` does in a cluster."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from streams.cli import cli
from streams.cli.apply import onboarded_records
from streams.colocationprofile.onboarding import ProfileStore
from streams.koordinator.classes import PRIORITY_BATCH
from streams.koordinator.colocationprofile import API_VERSION, KIND
from streams.koordinator.labels import LABEL_POD_QOS
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY

PROFILE = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "spark"},
           "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "jobs"}},
                    "qosClass": "BE", "priorityClassName": PRIORITY_BATCH, "schedulerName": "koord-scheduler"}}


def pod(namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}}


def write(path, *documents) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def test_a_pod_applied_with_a_profile_is_onboarded(tmp_path):
    store = ProfileStore(tmp_path / "profiles")
    profiles, records = onboarded_records(write(tmp_path / "a.yaml", PROFILE, pod("jobs")), store)
    assert list(profiles) == ["spark"]
    (record,) = records
    manifest = yaml.safe_load(record.record["manifest"])
    assert manifest["metadata"]["labels"][LABEL_POD_QOS] == "BE"
    assert (manifest["spec"]["priorityClassName"], manifest["spec"]["priority"]) == (PRIORITY_BATCH, 5000)
    assert record.record["requests"] == {BATCH_CPU: 2000, BATCH_MEMORY: 2**30}


def test_a_stored_profile_onboards_later_pods_until_it_is_deleted(tmp_path):
    env = {"KOORD_HOME": str(tmp_path / "home")}
    runner = CliRunner()
    result = runner.invoke(cli, ["apply", "-f", write(tmp_path / "p.yaml", PROFILE)], env=env)
    assert result.exit_code == 0, result.output
    assert "clustercolocationprofile/spark configured" in result.output
    store = ProfileStore(tmp_path / "home" / "colocationprofiles")
    _, (onboarded,) = onboarded_records(write(tmp_path / "pod.yaml", pod("jobs")), store)
    _, (elsewhere,) = onboarded_records(write(tmp_path / "web.yaml", pod("web")), store)
    assert set(onboarded.record["requests"]) == {BATCH_CPU, BATCH_MEMORY}
    assert set(elsewhere.record["requests"]) == {"cpu", "memory"}
    result = runner.invoke(cli, ["delete", "clustercolocationprofile", "spark"], env=env)
    assert result.exit_code == 0 and "deleted" in result.output, result.output
    _, (after,) = onboarded_records(write(tmp_path / "pod.yaml", pod("jobs")), store)
    assert set(after.record["requests"]) == {"cpu", "memory"}


def test_a_bad_profile_applies_nothing_and_names_the_field(tmp_path):
    bad = {**PROFILE, "spec": {"probability": "half", "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}}
    result = CliRunner().invoke(cli, ["apply", "-f", write(tmp_path / "bad.yaml", bad, pod("jobs"))],
                                env={"KOORD_HOME": str(tmp_path / "home")})
    assert result.exit_code == 1
    assert "document 0 (ClusterColocationProfile spark): spec.selector.matchExpressions[0]: values must be " \
           "non-empty for operator In" in result.output
    assert "spec.probability: invalid value for IntOrString" in result.output
    assert not (tmp_path / "home" / "colocationprofiles").exists()


def test_an_onboarded_pod_is_placed_on_batch_resources(tmp_path):
    """A node with 1 core of cpu left but 8 of batch-cpu: the pod as written (2 cores of cpu) does not fit; the
    same pod applied with the profile asks batch-cpu, and the scheduler binds it there."""
    from tests.streams.scheduler.support import GI, decisions, event, node, run

    store = ProfileStore(tmp_path / "profiles")
    big_node = node("n1", cpu=1000, memory=4 * GI, extra={BATCH_CPU: 8000, BATCH_MEMORY: 16 * GI})
    placed = {}
    for name, documents in (("as written", (pod("jobs"),)), ("onboarded", (PROFILE, pod("jobs")))):
        _, (record,) = onboarded_records(write(tmp_path / "a.yaml", *documents), store)
        _, outputs = run(big_node, event("Pod", record.key, record.record))
        (decision,) = decisions(outputs)
        placed[name] = decision.get("nodeName")
    assert placed == {"as written": None, "onboarded": "n1"}
