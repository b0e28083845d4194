"""Core-scheduling groups: the pods of one ``core_sched.group`` share one cookie (koordlet's ``coresched`` hook).

A cookie is per task, set with ``prctl(PR_SCHED_CORE, ...)`` (Linux >= 5.14
with ``CONFIG_SCHED_CORE``); tasks with different cookies never share an SMT
core at the same time. For a pod's thread groups (``cgroup.procs`` of the pod
directory and everything below it):

- group ``0`` (``CORE_SCHED_NONE``): each thread group gets the default
  cookie: a helper thread without a cookie pushes its own (none) to it
  (``SHARE_TO``, scope thread group);
- another group: the first time the group is seen (or when the task that
  carried its cookie is gone), ``CREATE`` gives the pod's first thread group
  a new cookie and that task becomes the group's carrier; every other thread
  group whose cookie differs gets the carrier's: a helper thread pulls it
  (``SHARE_FROM``, the only way to read a cookie into a task) and pushes it
  (``SHARE_TO``), then exits, so no long-lived agent thread ever holds a
  cookie (a new thread inherits its creator's, and the agent's threads have
  none).

The group -> carrier map is in memory: after an agent restart a group gets a
new cookie on its next actuation (the old one stays with the tasks until
then). Tasks the pod starts later inherit the cookie when forked from a task
that has it; a container started by the runtime does not, until the next
actuation of the pod (koordlet re-applies on container events; the contract
has none). Read back: ``0`` when every task has the default cookie, the group
whose carrier holds the cookie every task has, else nothing.

A kernel without core scheduling answers ``EINVAL``: the setting is then
reported unsupported and the pod's other settings are applied.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import threading
from typing import Protocol

from streams.actuation import CORE_SCHED_NONE

PR_SCHED_CORE = 62
GET, CREATE, SHARE_TO, SHARE_FROM = 0, 1, 2, 3
PIDTYPE_PID, PIDTYPE_TGID = 0, 1
GROUP = re.compile(r"^[A-Za-z0-9_.-]{0,128}$")
"""A label value or a pod UID, optionally with ``-expeller``; empty is the shared default group."""


class Kernel(Protocol):
    def unsupported(self) -> str | None: ...

    def cookie(self, pid: int) -> int: ...

    def create(self, tgid: int) -> None: ...

    def share(self, source: int | None, tgid: int) -> None:
        """Give thread group ``tgid`` the cookie of task ``source`` (None: the default cookie)."""


class PrctlKernel:
    """``prctl(PR_SCHED_CORE)`` through libc; errors raise OSError with the errno."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_void_p]

    def _prctl(self, command: int, pid: int, scope: int, address=None) -> None:
        if self._libc.prctl(PR_SCHED_CORE, command, pid, scope, address) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    def unsupported(self) -> str | None:
        try:
            self.cookie(0)
        except OSError as err:
            if err.errno == errno.EINVAL:
                return "this kernel has no core scheduling (prctl PR_SCHED_CORE: EINVAL; needs Linux >= 5.14 " \
                       "with CONFIG_SCHED_CORE)"
            return f"prctl PR_SCHED_CORE: {err.strerror}"
        return None

    def cookie(self, pid: int) -> int:
        value = ctypes.c_uint64(0)
        self._prctl(GET, pid, PIDTYPE_PID, ctypes.addressof(value))
        return value.value

    def create(self, tgid: int) -> None:
        self._prctl(CREATE, tgid, PIDTYPE_TGID)

    def share(self, source: int | None, tgid: int) -> None:
        failure: list[OSError] = []

        def helper() -> None:
            try:
                if source is not None:
                    self._prctl(SHARE_FROM, source, PIDTYPE_PID)
                self._prctl(SHARE_TO, tgid, PIDTYPE_TGID)
            except OSError as err:
                failure.append(err)
        thread = threading.Thread(target=helper, name="koord-core-sched", daemon=True)
        thread.start()
        thread.join()
        if failure:
            raise failure[0]


class CoreScheduling:
    def __init__(self, kernel: Kernel | None = None) -> None:
        self._kernel = kernel
        self.carriers: dict[str, int] = {}
        """Group -> a task holding its cookie."""

    @property
    def kernel(self) -> Kernel:
        if self._kernel is None:
            self._kernel = PrctlKernel()
        return self._kernel

    def unsupported(self) -> str | None:
        return self.kernel.unsupported()

    def _cookie(self, pid: int) -> int | None:
        try:
            return self.kernel.cookie(pid)
        except OSError as err:
            if err.errno == errno.ESRCH:
                return None
            raise

    def apply(self, group: str, tgids: list[int]) -> str | None:
        """Put ``tgids`` in ``group``; the error, None on success (tasks that exited meanwhile are skipped)."""
        try:
            if group == CORE_SCHED_NONE:
                for tgid in tgids:
                    if self._cookie(tgid):
                        self._skip_gone(self.kernel.share, None, tgid)
                return None
            carrier = self.carriers.get(group)
            cookie = self._cookie(carrier) if carrier is not None else None
            if not cookie:
                for tgid in tgids:
                    if self._skip_gone(self.kernel.create, tgid):
                        carrier, cookie = tgid, self._cookie(tgid)
                        self.carriers[group] = carrier
                        break
            for tgid in tgids:
                if tgid != carrier and self._cookie(tgid) not in (None, cookie):
                    self._skip_gone(self.kernel.share, carrier, tgid)
            return None
        except OSError as err:
            return f"core scheduling group {group!r}: prctl PR_SCHED_CORE: {err.strerror or err}"

    @staticmethod
    def _skip_gone(call, *args) -> bool:
        try:
            call(*args)
            return True
        except OSError as err:
            if err.errno == errno.ESRCH:
                return False
            raise

    def read(self, tgids: list[int], asked: str) -> str | None:
        """The group every task of ``tgids`` is in (``asked`` when there is no task); None when they disagree or
        the cookie is no known group's."""
        if not tgids:
            return asked
        try:
            cookies = {c for c in (self._cookie(t) for t in tgids) if c is not None}
            if not cookies or cookies == {0}:
                return CORE_SCHED_NONE
            if len(cookies) > 1:
                return None
            [cookie] = cookies
            return next((group for group, carrier in self.carriers.items() if self._cookie(carrier) == cookie), None)
        except OSError:
            return None
