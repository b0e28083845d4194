"""``koord simulate``'s reader: decisions bind, Evictions end, Actuations are acknowledged; the rest is skipped."""

import asyncio

from streams.cli.simulate import follow_fleet_topics
from streams.schemas import codec
from tests.streams.fakeconsumer import OnePollConsumer, message


class Fleet:
    def __init__(self):
        self.seen = []

    def apply_decision(self, value, second):
        self.seen.append(("decision", value["v"], second))

    def evict(self, value):
        self.seen.append(("evict", value["v"]))

    def acknowledge(self, value, now_ms):
        self.seen.append(("actuation", value["v"]))


def test_each_decoded_record_goes_to_the_fleet_by_its_schema(monkeypatch):
    decoded = {b"d": ("SchedulingDecision", {"v": 1}), b"e": ("Eviction", {"v": 2}), b"a": ("Actuation", {"v": 3}),
               b"c": ("ConfigMap", {"v": 4})}

    def decode(data):
        if data not in decoded:
            raise codec.CodecError("not a record")
        return decoded[data]

    messages = [message("decisions", 0, b"d"), message("decisions", 1, None), message("decisions", 2, b"bad"),
                message("decisions", 3, b"c"), message("decisions", 4, b"e"), message("actuations", 0, b"a")]
    fleet = Fleet()

    async def main():
        stop = asyncio.Event()
        monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer(messages, stop))
        monkeypatch.setattr(codec, "decode", decode)
        await follow_fleet_topics(fleet, None, "b:9", {"decisions": "decisions", "actuations": "actuations"}, stop,
                                  {"second": 7})

    asyncio.run(main())
    assert fleet.seen == [("decision", 1, 7), ("evict", 2), ("actuation", 3)]
