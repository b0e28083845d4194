"""The bridge's settings: one frozen dataclass, the CLI flags derive from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

OBSERVE, ACTIVE = "observe", "active"
MODES = (OBSERVE, ACTIVE)


@dataclasses.dataclass(frozen=True)
class BridgeConfig:
    kubeconfig: Path | None
    """None: the pod's service account."""
    context: str | None = None
    """Context of the kubeconfig; None: its current-context."""
    mode: str = OBSERVE
    """``observe`` writes nothing to the cluster (shadow mode: ``koord shadow report`` compares);
    ``active`` also binds, marks, patches node status and evicts."""
    scheduler_name: str = "koord-scheduler"
    """Only pods naming this ``spec.schedulerName`` are bound by the bridge (kube-scheduler's profile name)."""
    state_dir: Path = Path(".koord/bridge")
    """Where the checkpoint lives (``KOORD_HOME/bridge``)."""
    consumer_group: str = "koord-bridge"
    """Kafka consumer group of the decision and node-resource readers (active mode)."""
    list_page: int = 500
    """Objects per list request (``limit``), as client-go's reflector pages."""
    watch_timeout_s: int = 300
    """Server-side timeout of one watch request; the watch then resumes from its last version."""
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 10.0
    """Retry delays after an API server or broker failure double from the initial to the maximum."""
    eviction_retry_s: float = 5.0
    """How long an eviction a PodDisruptionBudget refused (429) waits before it is tried again."""
    kube_api_qps: float = 50.0
    kube_api_burst: int = 100
    """Client-side rate limit of every request to the API server, requests/s and bucket size: kube-scheduler's
    ``clientConnection.qps`` / ``burst`` and their defaults (client-go's token bucket). Higher lets the bridge
    bind faster and weighs more on the API server; qps 0: no client-side limit."""
    write_concurrency: int = 32
    """Decisions written at once (different pods or nodes; one pod's decisions stay in order), as
    kube-scheduler's binding cycles run asynchronously; the rate limit still paces the requests."""
    watch_batch: int = 500
    """Watch events a reflector produces and checkpoints as one batch, taken from those already received."""

    def validate(self) -> "BridgeConfig":
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.kube_api_burst < 1:
            raise ValueError(f"kube_api_burst must be at least 1, got {self.kube_api_burst}")
        if self.write_concurrency < 1:
            raise ValueError(f"write_concurrency must be at least 1, got {self.write_concurrency}")
        if self.watch_batch < 1:
            raise ValueError(f"watch_batch must be at least 1, got {self.watch_batch}")
        return self


def backoff_delay(attempt: int, config: BridgeConfig) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): initial * 2^(attempt-1), at most the maximum."""
    return min(config.backoff_max_s, config.backoff_initial_s * 2 ** max(0, attempt - 1))
