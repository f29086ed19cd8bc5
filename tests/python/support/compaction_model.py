"""Random topics and a plain reference compactor written from the spec
(compaction.md §4–§7), independent of the Rust implementation.

A topic is a list of entry specs in topic order; ``build`` turns it into an
entry table, ``reference`` says what compaction must keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from hypothesis import strategies as st

import pulsar_entries as pe

from support import entrygen

KEYS = ["k0", "k1", "k2", "k3"]
MARKER = bytes.fromhex("0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101")


@dataclass
class Msg:
    key: str | None
    value: bytes | None
    event_time: int | None = None


@dataclass
class Entry:
    kind: str  # single | batch | marker | encrypted | chunk
    msgs: list[Msg] = field(default_factory=list)
    codec: str = "none"
    #: encrypted: num_messages_in_batch (None = not a batch); chunk: (uuid, chunk_id, num_chunks)
    n: int | None = None
    chunk: tuple[str, int, int] | None = None
    broker_meta: bool = False
    #: chunk: the whole message value
    data: bytes = b""


# ----------------------------------------------------------------- generation

keys = st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS), st.none())
values = st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=12))
event_times = st.one_of(st.none(), st.integers(0, 3))
codecs = st.sampled_from(["none", "lz4", "zlib", "zstd", "snappy"])
msgs = st.builds(Msg, keys, values, event_times)


@st.composite
def chunked(draw, uuid: str) -> list[Entry]:
    key = draw(keys)
    value = draw(st.binary(min_size=2, max_size=30))
    n = draw(st.integers(2, 3))
    et = draw(event_times)
    ids = list(range(n))
    mode = draw(st.sampled_from(["complete", "complete", "missing", "duplicate", "restart", "gap"]))
    if mode == "missing":
        ids = ids[:-1]
    elif mode == "duplicate":
        ids = ids[:1] + ids[:1] + ids[1:]
    elif mode == "restart":
        ids = [0, *ids]
    elif mode == "gap":
        ids = [0, n - 1]
    size = -(-len(value) // n)
    return [
        Entry("chunk", [Msg(key, value[i * size : (i + 1) * size], et)], chunk=(uuid, i, n), data=value) for i in ids
    ]


@st.composite
def topics(draw, max_entries: int = 14, chunks: bool = True, encrypted: bool = True, markers: bool = True):
    kinds = ["single", "batch", "batch"] + (["marker"] if markers else []) + (["encrypted"] if encrypted else [])
    kinds += ["chunk"] if chunks else []
    out: list[Entry] = []
    for i in range(draw(st.integers(0, max_entries))):
        kind = draw(st.sampled_from(kinds))
        if kind == "single":
            out.append(Entry("single", [draw(msgs)], draw(codecs), broker_meta=draw(st.booleans())))
        elif kind == "batch":
            out.append(
                Entry(
                    "batch", draw(st.lists(msgs, min_size=1, max_size=6)), draw(codecs), broker_meta=draw(st.booleans())
                )
            )
        elif kind == "marker":
            out.append(Entry("marker"))
        elif kind == "encrypted":
            n = draw(st.one_of(st.none(), st.integers(1, 4)))
            out.append(Entry("encrypted", [Msg(draw(keys), draw(st.binary(min_size=1, max_size=16)))], n=n))
        else:
            out.extend(draw(chunked(f"u{i}")))
    return out


# ----------------------------------------------------------------- building


def encode(e: Entry, index: int) -> bytes:
    publish_time = 1_700_000_000_000 + index
    if e.kind == "marker":
        return MARKER
    if e.kind == "encrypted":
        return entrygen.encrypted_entry(e.n, e.msgs[0].key, e.msgs[0].value, publish_time=publish_time)
    if e.kind == "chunk":
        uuid, chunk_id, n = e.chunk
        m = e.msgs[0]
        return entrygen.frame(
            entrygen.Meta(
                producer_name="chunker",
                sequence_id=index,
                publish_time=publish_time,
                partition_key=m.key,
                uncompressed_size=len(e.data),
                event_time=m.event_time,
                uuid=uuid,
                num_chunks_from_msg=n,
                total_chunk_msg_size=len(e.data),
                chunk_id=chunk_id,
            ),
            m.value,
        )
    kw = {}
    if e.broker_meta:
        kw = {"broker_timestamp": publish_time + 1, "broker_index": index}
    return pe.encode_entry(
        [{"value": m.value, "key": m.key, "event_time": m.event_time} for m in e.msgs],
        batch=e.kind == "batch",
        compression=e.codec,
        producer_name="model",
        sequence_id=index * 10,
        publish_time=publish_time,
        **kw,
    )


LEDGER = 7


def build(topic: list[Entry]) -> pa.Table:
    data = [encode(e, i) for i, e in enumerate(topic)]
    return pa.table(
        {
            "ledger_id": pa.array([LEDGER] * len(data), pa.int64()),
            "entry_id": pa.array(range(len(data)), pa.int64()),
            "data": pa.array(data, pa.binary()),
        }
    )


# ----------------------------------------------------------------- reference


def _tombstone(m: Msg) -> bool:
    return m.value is None or len(m.value) == 0


def reference(topic: list[Entry], order: str = "publish", retain_null_key: bool = False) -> dict:
    """Positions to keep: ``{(entry_id, batch_index)}`` (batch index −1 for non-batched)."""
    latest: dict[str, tuple] = {}  # key -> (positions, event_time)
    pending: dict[tuple, dict] = {}  # (key, uuid) -> {"n", "last", "positions", "et"}
    null_kept: set = set()

    def offer(key, positions, tombstone, et, batched):
        prev = latest.get(key)
        newer = (et > prev[1] if batched else et >= prev[1]) if order == "event_time" and prev is not None else True
        if not newer:
            return
        if tombstone:
            latest.pop(key, None)
        else:
            latest[key] = (positions, et)

    for entry_id, e in enumerate(topic):
        if e.kind == "marker":
            continue
        if e.kind == "batch":
            for i, m in enumerate(e.msgs):
                if m.key is None:
                    if retain_null_key:
                        null_kept.add((entry_id, i))
                    continue
                offer(m.key, [(entry_id, i)], _tombstone(m), m.event_time or 0, True)
            continue
        m = e.msgs[0]
        if e.kind == "encrypted":
            if m.key is None:
                if retain_null_key:
                    null_kept.add((entry_id, -1))
                continue
            offer(m.key, [(entry_id, -1)], False, 0, False)
            continue
        if e.kind == "single":
            if m.key is None:
                if retain_null_key:
                    null_kept.add((entry_id, -1))
                continue
            offer(m.key, [(entry_id, -1)], _tombstone(m), m.event_time or 0, False)
            continue
        # a chunk
        uuid, chunk_id, n = e.chunk
        if m.key is None:
            if retain_null_key:
                null_kept.add((entry_id, -1))
            continue
        ctx_id = (m.key, uuid)
        if chunk_id == 0:
            pending[ctx_id] = {"n": n, "last": 0, "positions": [(entry_id, -1)]}
        else:
            ctx = pending.get(ctx_id)
            if ctx is None or chunk_id <= ctx["last"]:
                continue
            if chunk_id != ctx["last"] + 1:
                del pending[ctx_id]
                continue
            ctx["last"] = chunk_id
            ctx["positions"].append((entry_id, -1))
        ctx = pending[ctx_id]
        if ctx["last"] + 1 >= ctx["n"]:
            del pending[ctx_id]
            offer(m.key, ctx["positions"], False, m.event_time or 0, False)
    kept = set(null_kept)
    for positions, _ in latest.values():
        kept.update(positions)
    for ctx in pending.values():
        kept.update(ctx["positions"])
    return {"kept": kept, "keys": {k: v[0][-1] for k, v in latest.items()}}


def expected_entries(topic: list[Entry], order: str = "publish", retain_null_key: bool = False) -> list[tuple]:
    """``[(entry_id, retained batch indexes or None for a verbatim copy)]`` in order."""
    kept = reference(topic, order, retain_null_key)["kept"]
    out = []
    for entry_id, e in enumerate(topic):
        if e.kind == "batch":
            idx = [i for i in range(len(e.msgs)) if (entry_id, i) in kept]
            if idx:
                out.append((entry_id, idx))
        elif e.kind != "marker" and (entry_id, -1) in kept:
            out.append((entry_id, None))
    return out
