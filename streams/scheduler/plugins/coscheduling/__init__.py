"""Coscheduling: Koordinator's All-or-Nothing gang scheduling (``pkg/scheduler/plugins/coscheduling``)."""

from streams.scheduler.plugins.coscheduling.gang import Gang, gang_id_of
from streams.scheduler.plugins.coscheduling.plugin import NAME, Coscheduling, CoschedulingArgs

__all__ = ["NAME", "Coscheduling", "CoschedulingArgs", "Gang", "gang_id_of"]
