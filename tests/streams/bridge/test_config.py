"""The bridge's client rate limit defaults to kube-scheduler's ``clientConnection`` (qps 50, burst 100:
``SetDefaults_KubeSchedulerConfiguration``); a bad setting names its field."""

import pytest

from streams.bridge.config import BridgeConfig


def test_the_client_rate_limit_is_kube_schedulers_by_default():
    config = BridgeConfig(kubeconfig=None).validate()
    assert (config.kube_api_qps, config.kube_api_burst) == (50.0, 100)


@pytest.mark.parametrize("field, value", [("kube_api_burst", 0), ("write_concurrency", 0), ("watch_batch", 0)])
def test_a_bad_setting_names_its_field(field, value):
    with pytest.raises(ValueError, match=f"^{field} must be at least 1, got {value}$"):
        BridgeConfig(kubeconfig=None, **{field: value}).validate()
