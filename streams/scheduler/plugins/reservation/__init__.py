"""Reservation: Koordinator's resource reservation (``pkg/scheduler/plugins/reservation``)."""

from streams.scheduler.plugins.reservation.plugin import NAME, Reservation, ReservationArgs

__all__ = ["NAME", "Reservation", "ReservationArgs"]
