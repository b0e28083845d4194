"""Prometheus series of the node agent, the publisher and the simulator.

Per pod, beside what the NodeMetric carries: CFS throttling (throttled periods
/ periods over the last report interval, as koordlet's pod-throttled collector
computes it; also in ``podsMetric[].throttledRatio``), cold page bytes (also in
the NodeMetric), and what it has no field for: PSI averages and per-container
CPU and memory.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

PUBLISHED = Counter("koord_node_agent_published_records_total", "Records delivered to the broker.",
                    ["topic"])
DROPPED = Counter("koord_node_agent_dropped_records_total",
                  "Metric records dropped, oldest first, because the publish buffer was full.", ["topic"])
DECISIONS_IGNORED = Counter("koord_node_agent_decisions_ignored_total",
                            "SchedulingDecisions the pod follower ignored: reason duplicate (its id was applied) or "
                            "deleted (it places a pod seen deleted).", ["reason"])
RECONNECTS = Counter("koord_node_agent_broker_reconnects_total", "Broker (re)connection attempts that failed.")
BUFFERED = Gauge("koord_node_agent_buffered_records", "Records waiting for the broker.", ["kind"])
BROKER_CONNECTED = Gauge("koord_node_agent_broker_connected",
                         "1 while the publisher's last connect or send succeeded, else 0; labelled so that only "
                         "processes that publish export it.", ["bootstrap"])

COLLECT_SECONDS = Gauge("koord_node_agent_collect_seconds", "Duration of the last collection round.")
POD_CGROUPS = Gauge("koord_node_agent_pod_cgroups", "Pod cgroups found in the last collection round.")
THROTTLED_RATIO = Gauge("koord_node_agent_pod_cpu_throttled_ratio",
                        "Throttled CFS periods / periods over the last report interval.", ["pod_uid"])
PRESSURE = Gauge("koord_node_agent_pod_pressure_avg10_percent", "PSI avg10 of a pod cgroup.",
                 ["pod_uid", "resource", "kind"])
COLD_PAGE_BYTES = Gauge("koord_node_agent_cold_page_bytes", "kidled cold page bytes; pod_uid \"\" is the node.",
                        ["pod_uid"])
CONTAINER_CPU = Gauge("koord_node_agent_container_cpu_usage_cores",
                      "Container CPU over the last report interval.", ["pod_uid", "container_id"])
CONTAINER_MEMORY = Gauge("koord_node_agent_container_memory_usage_bytes",
                         "Container memory under the configured policy.", ["pod_uid", "container_id"])

ACTUATIONS = Counter("koord_node_agent_actuations_total",
                     "Actuations handled by the actuator; result is applied, partial (some settings unsupported), "
                     "unsupported, failed, rejected or dry-run.",
                     ["mechanism", "result"])
ACTUATIONS_REJECTED = Counter("koord_node_agent_actuations_rejected_total",
                              "Actuations refused before anything was written, by reason "
                              "(node_agent.actuator.verify).", ["reason"])
ACTUATION_LATENCY = Histogram("koord_actuation_latency_seconds",
                              "From the Actuation record's timestamp to the last kernel write done.",
                              ["mechanism"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                                                      10.0, 30.0, 60.0))

ACTUATIONS_ACKED = Counter("koord_simulator_actuations_acknowledged_total", "Actuations the simulator acknowledged.",
                           ["applied"])


def forget_pod(uid: str, container_ids: list[str]) -> None:
    """Remove the series of a pod whose cgroup is gone."""
    for gauge, labels in ((THROTTLED_RATIO, (uid,)), (COLD_PAGE_BYTES, (uid,))):
        _remove(gauge, *labels)
    for resource in ("cpu", "memory", "io"):
        for kind in ("some", "full"):
            _remove(PRESSURE, uid, resource, kind)
    for container in container_ids:
        forget_container(uid, container)


def forget_container(uid: str, container_id: str) -> None:
    _remove(CONTAINER_CPU, uid, container_id)
    _remove(CONTAINER_MEMORY, uid, container_id)


def _remove(gauge: Gauge, *labels: str) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:
        pass
PROTECTION_ACTIVE = Gauge("koord_node_agent_protection_active",
                          "1 while the agent protects the node itself (actuation stream unreachable or silent).")
PROTECTION_ACTUATIONS = Counter("koord_node_agent_protection_actuations_total",
                                "Local protection actuations (CPU suppress, hand-back) applied or failed.", ["result"])
PROTECTION_EVICTIONS = Counter("koord_node_agent_protection_evictions_total",
                               "Evictions local protection planned and reported (never carried out).", ["reason"])
