"""Prometheus and promtool for the monitoring tests (Debian's ``prometheus`` package, ``.ci/prometheus-up``).

Without them the tests skip with the reason, unless ``KOORD_REQUIRE_PROMETHEUS`` is set (``make test``
sets it): then they fail.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_prometheus() -> None:
    """Skip (or fail, with KOORD_REQUIRE_PROMETHEUS) when ``prometheus`` or ``promtool`` is not on PATH."""
    missing = [tool for tool in ("prometheus", "promtool") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not on PATH (bash .ci/prometheus-up installs them)"
        if os.environ.get("KOORD_REQUIRE_PROMETHEUS"):
            pytest.fail(f"{reason}; KOORD_REQUIRE_PROMETHEUS is set, so this is a failure, not a skip")
        pytest.skip(reason)
