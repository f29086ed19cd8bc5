"""A made-up entry format and the user payload processor that reads it.

Entries carry property ``entry.format=lines``; the payload is UTF-8 text, one
message per line: ``key|value|prop=val,prop=val``. A line ``!boom`` makes the
processor raise, to exercise error rows.
"""

from __future__ import annotations

import pulsar_entries as pe
from pulsar_entries.processors import Processor


def lines_entry(lines, *, publish_time=1_700_000_000_000, compression="none", sequence_id=0):
    payload = "\n".join(lines).encode()
    return pe.encode_entry(
        [{"value": payload}],
        batch=False,
        compression=compression,
        producer_name="lines-producer",
        sequence_id=sequence_id,
        publish_time=publish_time,
        properties={"entry.format": "lines"},
    )


class LinesProcessor(Processor):
    name = "lines"
    entry_property = ("entry.format", "lines")

    def process(self, payload, context):
        out = []
        for i, line in enumerate(payload.decode().split("\n")):
            if line == "!boom":
                raise ValueError(f"cannot parse line {i} of entry {context.ledger_id}:{context.entry_id}")
            key, value, props = line.split("|")
            out.append(
                {
                    "key": key or None,
                    "value": value.encode(),
                    "properties": dict(p.split("=") for p in props.split(",") if p),
                    "event_time": context.publish_time - i,
                }
            )
        return out
