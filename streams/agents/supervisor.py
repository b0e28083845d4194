"""What happens when an agent fails: the worker stops, loudly.

Every record an agent reads is checked, and an event its core fails on is
dead-lettered (``streams.agents.inbox``), so an exception that still escapes
an agent is a fault of the worker or its broker connection, not of one
record. Faust's default would restart the agent in place after a back-off,
silently, and records arriving in that window were seen to go undecided.
Instead the worker logs the reason and exits with :data:`EXIT_AGENT_FAILED`;
whatever supervises it (``koord up``, Kubernetes) starts it again, and the
new worker resumes from the committed offsets: a batch in flight was never
committed (``inbox.uncommitted_on_failure``), so it is read again.

The worker first stops gracefully, so that it leaves its consumer group at
once; if that has not ended within :data:`STOP_DEADLINE_S`, the process exits
anyway with the same status, after printing every thread's stack.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading

from mode.supervisors import SupervisorStrategy

log = logging.getLogger(__name__)

EXIT_AGENT_FAILED = 70
"""The worker's exit status when an agent failed (EX_SOFTWARE)."""

STOP_DEADLINE_S = 20.0
"""How long a failing worker's graceful stop may take. A stop takes about a second; one that waited
on an unavailable group coordinator was seen to hang for minutes. Past twice the session timeout
(``streams.app.SESSION_TIMEOUT_S``) the group has moved the partitions on regardless, and the batch
in flight is read again either way, so waiting longer gains nothing."""


def _exit_now() -> None:
    """Exit at once; the stacks go to the process's own stderr, which a worker's logging may have replaced."""
    try:
        log.critical("the worker did not stop within %.0f s; exiting with status %d now", STOP_DEADLINE_S,
                     EXIT_AGENT_FAILED)
        faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
    finally:
        os._exit(EXIT_AGENT_FAILED)


class StopTheWorker(SupervisorStrategy):
    """An agent supervisor that never restarts an agent: it stops the worker with the agent's error."""

    async def restart_services(self, services) -> None:
        if not services:
            return
        for service in services:
            log.critical("agent %s failed: %r; stopping the worker (a new worker resumes from the committed "
                         "offsets)", getattr(service, "name", service), service.crash_reason)
        deadline = threading.Timer(STOP_DEADLINE_S, _exit_now)
        deadline.daemon = True
        deadline.start()
        raise SystemExit(EXIT_AGENT_FAILED)
