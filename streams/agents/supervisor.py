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
"""

from __future__ import annotations

import logging

from mode.supervisors import SupervisorStrategy

log = logging.getLogger(__name__)

EXIT_AGENT_FAILED = 70
"""The worker's exit status when an agent failed (EX_SOFTWARE)."""


class StopTheWorker(SupervisorStrategy):
    """An agent supervisor that never restarts an agent: it stops the worker with the agent's error."""

    async def restart_services(self, services) -> None:
        if not services:
            return
        for service in services:
            log.critical("agent %s failed: %r; stopping the worker (a new worker resumes from the committed "
                         "offsets)", getattr(service, "name", service), service.crash_reason)
        raise SystemExit(EXIT_AGENT_FAILED)
