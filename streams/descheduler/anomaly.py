"""Koordinator's anomaly detector (``pkg/descheduler/utils/anomaly/basic_detector.go``), in event time.

A source node is acted upon only once it is anomalous: more than ``consecutive_abnormalities``
consecutive abnormal marks (one per round it is over its high threshold). It is normal again after more
than ``consecutive_normalities`` consecutive normal marks, when its anomaly has lasted ``timeout_ms``, or
on ``reset`` (it became a low node, or dropped below its threshold while being relieved). Leaving a state
clears the counters.
"""

from __future__ import annotations

import dataclasses

OK, ANOMALY = "ok", "anomaly"


@dataclasses.dataclass
class Detector:
    abnormalities: int
    """An OK node becomes anomalous when its consecutive abnormal marks exceed this."""
    normalities: int
    """An anomalous node becomes OK when its consecutive normal marks exceed this."""
    timeout_ms: int
    state: str = OK
    consecutive_abnormal: int = 0
    consecutive_normal: int = 0
    expires_ms: int | None = None

    def _current(self, now_ms: int) -> str:
        if self.state == OK:
            if self.expires_ms is not None and self.expires_ms < now_ms:
                self._new_generation(now_ms)
        elif self.expires_ms < now_ms or self.consecutive_normal > self.normalities:
            self._set(OK, now_ms)
        return self.state

    def _set(self, state: str, now_ms: int) -> None:
        if self.state != state:
            self.state = state
            self._new_generation(now_ms)

    def _new_generation(self, now_ms: int) -> None:
        self.consecutive_abnormal = self.consecutive_normal = 0
        self.expires_ms = now_ms + self.timeout_ms if self.state == ANOMALY else None

    def mark(self, normal: bool, now_ms: int) -> str:
        state = self._current(now_ms)
        if normal:
            self.consecutive_normal += 1
            self.consecutive_abnormal = 0
            if state == ANOMALY and self.consecutive_normal > self.normalities:
                self._set(OK, now_ms)
        else:
            self.consecutive_abnormal += 1
            self.consecutive_normal = 0
            if state == OK and self.consecutive_abnormal > self.abnormalities:
                self._set(ANOMALY, now_ms)
        return self._current(now_ms)

    def reset(self, now_ms: int) -> None:
        self._set(OK, now_ms)
