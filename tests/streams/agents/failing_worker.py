"""A Faust worker whose one agent fails on its first record, supervised as koordstream's agents are
(``StopTheWorker``); run as ``python failing_worker.py BOOTSTRAP TOPIC`` by ``test_supervisor.py``."""

import sys

import faust

from streams.agents.supervisor import StopTheWorker

bootstrap, topic_name = sys.argv[1], sys.argv[2]
app = faust.App("koord-failing-probe", broker=f"kafka://{bootstrap}", store="memory://", web_enabled=False,
                agent_supervisor=StopTheWorker, topic_allow_declare=False, broker_session_timeout=6.0,
                broker_heartbeat_interval=1.0, consumer_auto_offset_reset="earliest")
topic = app.topic(topic_name, value_type=bytes, value_serializer="raw")


@app.agent(topic)
async def fails(stream):
    async for _ in stream:
        raise RuntimeError("the probe agent fails on purpose")


if __name__ == "__main__":
    sys.argv = [sys.argv[0], "worker", "-l", "warn", "--without-web"]
    app.main()
