"""Faust's livelock detector told apart from a catch-up. Checked against faust-streaming 0.15.3
(``FAUST_VERSION``).

Every ``2.5 × broker_commit_interval`` the consumer's ``_commit_livelock_detector`` calls
``AIOKafkaConsumerThread.verify_event_path`` for each assigned partition. With records past the fetch
position (highwater > position) it logs at ERROR:

- "Stream has not started processing TP (started ...)" when no event of *that partition* reached a stream
  within ``stream_processing_timeout`` (300 s) of the worker's start, "Stream stopped processing, or is
  slow" when its last one is that old;
- "Has not committed TP at all since worker start" / "Has not committed TP (last commit ...)" when
  ``tp_last_committed_at`` is older than ``broker_commit_livelock_soft_timeout`` (300 s).

Two causes, both seen while a worker worked off 200,000 decisions:

1. The router reads every source topic in one stream (``streams.agents.router``), in the order the consumer
   hands the records over (aiokafka drains its buffered fetch results in arrival order, Faust goes round
   the topics within each batch); during a backlog of one topic (decisions), another's partitions
   (``koord.nodes``) wait behind it for longer than 300 s while the stream takes events all along. The detector looks at one partition
   and cannot tell that from a stuck agent. :func:`install_catch_up_warnings` asks the question it cannot:
   did the stream reading this partition take an event of *any* of its topics within the timeout
   (``Monitor.stream_inbound_time`` of the partitions of every topic the channels reading this one read,
   ``Conductor._topic_name_index``)? If so the partition waits behind a backlog and a WARNING says so,
   once per partition and timeout; if not, Faust's ERROR stands: that stream is not processing.
2. Under exactly-once, Faust commits through ``transactions.commit`` and only its non-transactional
   ``_commit`` stamps ``tp_last_committed_at``, so every partition "has not committed at all" 300 s after
   the start however often it commits. :func:`install_transactional_commit_times` stamps it after a
   transactional commit too.
"""

from __future__ import annotations

from time import monotonic

from mode.utils.times import humanize_seconds_ago

CATCH_UP = ("%r: %s, while the stream reading it took an event %s; its records wait behind the backlog of "
            "the other partitions that stream reads (a catch-up), it is not stuck")
NOT_STARTED = "no event of it has reached a stream since the worker started %s"
STOPPED = "its last event reached a stream %s"


def install_catch_up_warnings() -> None:
    """Make Faust's stream livelock ERROR a WARNING when the worker's streams are processing (idempotent)."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    if not getattr(AIOKafkaConsumerThread, "_koord_catch_up_warnings", False):
        warn_on_catch_up(AIOKafkaConsumerThread)


def warn_on_catch_up(cls: type) -> None:
    """Wrap ``_log_slow_processing_stream(msg, tp, ago)`` of ``cls``, a class with Faust's consumer thread
    interface (``consumer.app.monitor``, ``consumer.app.topics``, ``tp_stream_timeout_secs``, ``log``)."""
    from faust.transport.drivers import aiokafka as driver

    original = cls._log_slow_processing_stream

    def _log_slow_processing_stream(self, msg, *args):
        now = monotonic()
        timeout = self.tp_stream_timeout_secs
        tp, ago = args
        app = self.consumer.app
        siblings = {topic for channel in app.topics._topic_name_index.get(tp.topic, ())
                    for topic in channel.topics}
        latest = max((at for other, at in app.monitor.stream_inbound_time.items() if other.topic in siblings),
                     default=None)
        if latest is None or now - latest >= timeout:
            return original(self, msg, *args)
        warned = self.__dict__.setdefault("_koord_catch_up_warned", {})
        if now - warned.get(tp, -timeout) < timeout:
            return None
        warned[tp] = now
        what = NOT_STARTED if msg == driver.SLOW_PROCESSING_STREAM_IDLE_SINCE_START else STOPPED
        return self.log.warning(CATCH_UP, tp, what % ago, humanize_seconds_ago(now - latest))

    cls._log_slow_processing_stream = _log_slow_processing_stream
    cls._koord_catch_up_warnings = True


def install_transactional_commit_times() -> None:
    """Make a transactional commit stamp the commit times Faust's livelock detector reads (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_transactional_commit_times", False):
        stamp_transactional_commits(Consumer)


def stamp_transactional_commits(cls: type) -> None:
    """Wrap ``_commit_offsets(offsets, ...)`` of ``cls``, a class with Faust's consumer interface
    (``in_transaction``, ``assignment()``, ``_thread.tp_last_committed_at`` on the aiokafka driver): after a
    transactional commit, the committed partitions' commit time is now."""
    original = cls._commit_offsets

    async def _commit_offsets(self, offsets, *args, **kwargs):
        did_commit = await original(self, offsets, *args, **kwargs)
        stamps = getattr(getattr(self, "_thread", None), "tp_last_committed_at", None)
        if did_commit and self.in_transaction and stamps is not None:
            assignment = self.assignment()
            stamps.update({tp: monotonic() for tp in offsets if tp in assignment})
        return did_commit

    cls._commit_offsets = _commit_offsets
    cls._koord_transactional_commit_times = True
