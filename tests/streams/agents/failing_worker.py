"""A Faust worker whose one agent fails on its first record, supervised as koordstream's agents are
(``StopTheWorker``); run as ``python failing_worker.py BOOTSTRAP TOPIC [hang]`` by ``test_supervisor.py``.
With ``hang``, stopping the app blocks the event loop for good, and the stop deadline is 3 s."""

import sys
import threading

import faust

from streams.agents import supervisor


class HangsOnStop(faust.App):
    async def on_stop(self) -> None:
        threading.Event().wait()


bootstrap, topic_name = sys.argv[1], sys.argv[2]
hang = sys.argv[3:] == ["hang"]
if hang:
    supervisor.STOP_DEADLINE_S = 3.0
app = (HangsOnStop if hang else faust.App)(
    "koord-failing-probe", broker=f"kafka://{bootstrap}", store="memory://", web_enabled=False,
    agent_supervisor=supervisor.StopTheWorker, topic_allow_declare=False, broker_session_timeout=6.0,
    broker_heartbeat_interval=1.0, consumer_auto_offset_reset="earliest")
topic = app.topic(topic_name, value_type=bytes, value_serializer="raw")


@app.agent(topic)
async def fails(stream):
    async for _ in stream:
        raise RuntimeError("the probe agent fails on purpose")


if __name__ == "__main__":
    sys.argv = [sys.argv[0], "worker", "-l", "warn", "--without-web"]
    app.main()
