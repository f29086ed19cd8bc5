//! The state machine: one chunk row at a time, in topic order.

use std::collections::HashMap;

use arrow_array::{Array, RecordBatch};

use super::columns::Cols;
use super::options::{
    ReassemblyOptions, ORPHAN_CHUNK_LIMIT, ORPHAN_LIMIT, ROLE_CHUNK, ROLE_RESTART,
    STATUS_DUPLICATE, STATUS_EVICTED, STATUS_EXPIRED, STATUS_INCOMPLETE,
};
use super::state::{
    close, complete, describe_ids, null_value, template_of, Bytes, Chunk, Ctx, Event, Held, Kind,
    Machine, Mode, Outcome, Part, Sink,
};
use crate::error::Result;
use crate::format::compression::Decompressor;

impl Part {
    /// Expires every context whose deadline the stream clock has passed.
    pub(super) fn sweep(&mut self, expire: i64, sink: &mut Sink) {
        let Some(now) = self.watermark else { return };
        while let Some((&(deadline, _), uuid)) = self.deadlines.first_key_value() {
            if deadline >= now {
                break;
            }
            let uuid = uuid.clone();
            let ctx = self.remove(&uuid).expect("deadlines index open contexts");
            // The clock's exact value depends on which row noticed; say only the rule.
            let why = format!(
                "the stream time passed its publish time {} + expire_after_ms={expire}",
                deadline - expire
            );
            let status = match ctx.kind {
                Kind::Live(_) => STATUS_EXPIRED,
                Kind::Orphan(_) => STATUS_INCOMPLETE,
            };
            close(ctx, status, &why, sink);
        }
    }

    pub(super) fn insert(&mut self, ctx: Ctx) {
        if let Some(d) = ctx.deadline {
            self.deadlines.insert((d, ctx.seq), ctx.uuid.clone());
        }
        match ctx.kind {
            Kind::Live(_) => self.live.insert(ctx.seq, ctx.uuid.clone()),
            Kind::Orphan(_) => self.orphans.insert(ctx.seq, ctx.uuid.clone()),
        };
        self.ctxs.insert(ctx.uuid.clone(), ctx);
    }

    pub(super) fn limit_orphans(&mut self, sink: &mut Sink) {
        while self.orphans.len() > ORPHAN_LIMIT {
            let (_, oldest) = self.orphans.pop_first().expect("non-empty");
            let ctx = self.remove(&oldest).expect("orphans index open contexts");
            let why = format!("more than {ORPHAN_LIMIT} incomplete messages were open");
            close(ctx, STATUS_INCOMPLETE, &why, sink);
        }
    }
}

impl Machine {
    pub(super) fn new(opts: ReassemblyOptions, mode: Mode) -> Result<Self> {
        opts.validate()?;
        Ok(Machine {
            opts,
            mode,
            parts: HashMap::new(),
            next_seq: 0,
            decompressor: Decompressor::default(),
            seeds: HashMap::new(),
        })
    }

    /// Processes one input batch; `cols` are read from it.
    pub(super) fn push(&mut self, batch: &RecordBatch, cols: &Cols, sink: &mut Sink) -> Result<()> {
        let values = cols.values();
        let expire = self.opts.expire_after_ms.unwrap_or(0);
        for i in 0..batch.num_rows() {
            let partition = cols.partition(i);
            let seed = self.seeds.get(&partition).copied();
            let part = self.parts.entry(partition).or_insert_with(|| Part {
                watermark: seed,
                ..Default::default()
            });
            if let Some(t) = Cols::opt_i64(&cols.time, i) {
                part.watermark = Some(part.watermark.map_or(t, |w| w.max(t)));
            }
            part.sweep(expire, sink);
            if !cols.is_chunk(i) {
                sink.events.push(Event::Row(i));
                continue;
            }
            let chunk = Chunk {
                partition,
                uuid: cols.uuid.value(i),
                chunk_id: cols.chunk_id.value(i),
                num_chunks: cols.num_chunks.value(i),
                total: cols.total.is_valid(i).then(|| cols.total.value(i)),
                ledger: cols.ledger.value(i),
                entry: cols.entry.value(i),
                publish_time: Cols::opt_i64(&cols.publish, i),
                value: values.get(i),
                compression: cols
                    .compression
                    .is_valid(i)
                    .then(|| cols.compression.value(i)),
                uncompressed: Cols::opt_i64(&cols.uncompressed, i),
                encrypted: cols
                    .encrypted
                    .as_ref()
                    .is_some_and(|e| e.is_valid(i) && e.value(i)),
                broker_ts: cols.broker_ts.as_ref().and_then(|a| Cols::opt_i64(a, i)),
                broker_index: cols.broker_index.as_ref().and_then(|a| Cols::opt_i64(a, i)),
                restart_marker: cols
                    .role
                    .as_ref()
                    .is_some_and(|r| r.is_valid(i) && r.value(i) == ROLE_RESTART),
            };
            self.on_chunk(&chunk, batch, i, sink)?;
        }
        Ok(())
    }

    pub(super) fn on_chunk(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        sink: &mut Sink,
    ) -> Result<()> {
        let partition_pass = self.mode == Mode::Partition;
        let part = self.parts.get_mut(&c.partition).expect("created by push");
        let held = Held {
            ledger: c.ledger,
            entry: c.entry,
            chunk_id: c.chunk_id,
            watermark: part.watermark.unwrap_or(i64::MIN),
            row: if partition_pass {
                // A zero-copy slice: a partition's batches are in memory anyway.
                Some(batch.slice(row, 1))
            } else {
                None
            },
        };
        let at = format!("{}:{}", c.ledger, c.entry);
        if c.restart_marker {
            // Finishing pass: a chunk 0 decided in a later partition ends this uuid's message.
            if let Some(ctx) = part.remove(c.uuid) {
                close(
                    ctx,
                    STATUS_INCOMPLETE,
                    &format!("restarted by a new chunk 0 at {at}"),
                    sink,
                );
            }
            return Ok(());
        }
        if partition_pass && part.deferred.contains(c.uuid) {
            if c.chunk_id != 0 {
                sink.leftovers
                    .push((held.row.expect("copied"), held.watermark, ROLE_CHUNK));
                return Ok(());
            }
            part.deferred.remove(c.uuid);
        }
        let Some(ctx) = part.ctxs.get_mut(c.uuid) else {
            if c.chunk_id == 0 {
                return self.start(c, batch, row, held, true, sink);
            }
            if partition_pass {
                // May continue a message of an earlier partition: decided later.
                part.deferred.insert(c.uuid.to_owned());
                sink.leftovers
                    .push((held.row.expect("copied"), held.watermark, ROLE_CHUNK));
                return Ok(());
            }
            let reason = format!(
                "chunk 0 was never seen (the first chunk read is {} of {})",
                c.chunk_id, c.num_chunks
            );
            return self.start_orphan(c, batch, row, held, reason, sink);
        };
        if c.chunk_id == 0 {
            let ctx = part.remove(c.uuid).expect("present");
            close(
                ctx,
                STATUS_INCOMPLETE,
                &format!("restarted by a new chunk 0 at {at}"),
                sink,
            );
            return self.start(c, batch, row, held, false, sink);
        }
        let last_chunk = c.chunk_id == c.num_chunks - 1;
        match &mut ctx.kind {
            Kind::Orphan(_) => {
                absorb(ctx, c, held);
                if last_chunk || ctx.held.len() >= ORPHAN_CHUNK_LIMIT {
                    let ctx = part.remove(c.uuid).expect("present");
                    close(
                        ctx,
                        STATUS_INCOMPLETE,
                        &format!("chunk {} arrived at {at}", c.chunk_id),
                        sink,
                    );
                }
            }
            Kind::Live(_) if c.chunk_id <= ctx.last_chunk_id => {
                let first = ctx
                    .held
                    .iter()
                    .find(|h| h.chunk_id == c.chunk_id)
                    .map_or_else(|| "?".into(), |h| format!("{}:{}", h.ledger, h.entry));
                let error = format!(
                    "duplicate chunk {} of chunked message {} at {at} (already held from {first}); ignored",
                    c.chunk_id, c.uuid
                );
                sink.emit(Outcome {
                    status: STATUS_DUPLICATE,
                    template: template_of(batch, row)?,
                    held: vec![(c.ledger, c.entry)],
                    value: None,
                    error: Some(error),
                    broker_ts: c.broker_ts,
                    broker_index: c.broker_index,
                });
            }
            Kind::Live(_)
                if c.chunk_id != ctx.last_chunk_id + 1
                    || c.num_chunks != ctx.num_chunks
                    || c.total != ctx.total =>
            {
                let reason = if c.chunk_id != ctx.last_chunk_id + 1 {
                    format!(
                        "chunk {} arrived at {at} after chunk {} (missing {})",
                        c.chunk_id,
                        ctx.last_chunk_id,
                        describe_ids(&((ctx.last_chunk_id + 1)..c.chunk_id).collect::<Vec<_>>())
                    )
                } else {
                    format!(
                        "chunk {} at {at} says num_chunks {} and total_chunk_msg_size {:?}, chunk 0 said {} and {:?}",
                        c.chunk_id, c.num_chunks, c.total, ctx.num_chunks, ctx.total
                    )
                };
                // Keeps its deadline and its chunk ids; drops its bytes.
                ctx.kind = Kind::Orphan(reason);
                absorb(ctx, c, held);
                let seq = ctx.seq;
                let uuid = ctx.uuid.clone();
                part.live.remove(&seq);
                part.orphans.insert(seq, uuid);
                if last_chunk {
                    let ctx = part.remove(c.uuid).expect("present");
                    close(
                        ctx,
                        STATUS_INCOMPLETE,
                        &format!("chunk {} arrived at {at}", c.chunk_id),
                        sink,
                    );
                } else {
                    part.limit_orphans(sink);
                }
            }
            Kind::Live(bytes) => {
                if let Bytes::Buffer(buf) = bytes {
                    let total = ctx.total.unwrap_or(0).max(0) as usize;
                    if buf.len() + c.value.len() > total {
                        *bytes = Bytes::Failed(format!(
                            "its chunks hold more than total_chunk_msg_size={total} bytes"
                        ));
                    } else {
                        buf.extend_from_slice(c.value);
                    }
                }
                absorb(ctx, c, held);
                if c.chunk_id == ctx.num_chunks - 1 {
                    let ctx = part.remove(c.uuid).expect("present");
                    complete(
                        &mut self.decompressor,
                        self.opts.max_message_size,
                        ctx,
                        sink,
                    );
                }
            }
        }
        Ok(())
    }

    pub(super) fn new_ctx(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        kind: Kind,
    ) -> Result<Ctx> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let deadline = self
            .opts
            .expire_after_ms
            .zip(c.publish_time)
            .map(|(e, p)| p.saturating_add(e));
        Ok(Ctx {
            seq,
            uuid: c.uuid.to_owned(),
            kind,
            template: template_of(batch, row)?,
            deadline,
            num_chunks: c.num_chunks,
            total: c.total,
            last_chunk_id: c.chunk_id - 1,
            held: Vec::new(),
            last_compression: None,
            last_uncompressed: None,
            last_broker_ts: None,
            last_broker_index: None,
            encrypted: false,
            marker: None,
        })
    }

    /// A new message from its chunk 0. `fresh`: no local state had the uuid.
    pub(super) fn start(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        held: Held,
        fresh: bool,
        sink: &mut Sink,
    ) -> Result<()> {
        let max = self.opts.max_message_size;
        let bytes = match c.total {
            None => Bytes::Failed("chunk 0 has no total_chunk_msg_size".into()),
            Some(t) if t < 0 => Bytes::Failed(format!("chunk 0 has total_chunk_msg_size {t}")),
            Some(t) if t as usize > max => Bytes::Failed(format!(
                "total_chunk_msg_size {t} exceeds the limit of {max} bytes"
            )),
            Some(t) if c.value.len() > t as usize => Bytes::Failed(format!(
                "its chunks hold more than total_chunk_msg_size={t} bytes"
            )),
            Some(_) => {
                // Grows with the chunks received, never with the claimed
                // total: a chunk 0 claiming 256 MiB costs its own bytes.
                Bytes::Buffer(c.value.to_vec())
            }
        };
        let mut ctx = self.new_ctx(c, batch, row, Kind::Live(bytes))?;
        if self.mode == Mode::Partition && fresh {
            let mut marker = held.clone();
            marker.row = held.row.as_ref().map(null_value).transpose()?;
            ctx.marker = Some(marker);
        }
        absorb(&mut ctx, c, held);
        let part = self.parts.get_mut(&c.partition).expect("exists");
        part.insert(ctx);
        if let Some(limit) = self.opts.max_pending {
            if part.live.len() > limit {
                let (_, oldest) = part.live.pop_first().expect("non-empty");
                let ctx = part.remove(&oldest).expect("live index open contexts");
                let why = format!("more than max_pending={limit} messages were pending");
                close(ctx, STATUS_EVICTED, &why, sink);
            }
        }
        Ok(())
    }

    pub(super) fn start_orphan(
        &mut self,
        c: &Chunk<'_>,
        batch: &RecordBatch,
        row: usize,
        held: Held,
        reason: String,
        sink: &mut Sink,
    ) -> Result<()> {
        let mut ctx = self.new_ctx(c, batch, row, Kind::Orphan(reason))?;
        absorb(&mut ctx, c, held);
        if c.chunk_id == c.num_chunks - 1 {
            let at = format!("{}:{}", c.ledger, c.entry);
            close(
                ctx,
                STATUS_INCOMPLETE,
                &format!("chunk {} arrived at {at}", c.chunk_id),
                sink,
            );
            return Ok(());
        }
        let part = self.parts.get_mut(&c.partition).expect("exists");
        part.insert(ctx);
        part.limit_orphans(sink);
        Ok(())
    }

    /// End of input: expire by the final clock, then report what is left (or,
    /// in the partition pass, hand it on).
    pub(super) fn finish(&mut self, final_watermarks: &HashMap<i32, i64>, sink: &mut Sink) {
        let expire = self.opts.expire_after_ms.unwrap_or(0);
        let mut partitions: Vec<i32> = self.parts.keys().copied().collect();
        partitions.sort_unstable();
        for p in partitions {
            let part = self.parts.get_mut(&p).expect("listed");
            if let Some(&w) = final_watermarks.get(&p) {
                part.watermark = Some(part.watermark.map_or(w, |x| x.max(w)));
            }
            if self.mode != Mode::Partition {
                part.sweep(expire, sink);
            }
            let mut left: Vec<Ctx> = part.ctxs.drain().map(|(_, c)| c).collect();
            part.live.clear();
            part.orphans.clear();
            part.deadlines.clear();
            part.deferred.clear();
            left.sort_by_key(|c| c.seq);
            for ctx in left {
                if self.mode == Mode::Partition {
                    // Decided by the finishing pass, which sees what follows.
                    for h in ctx.held {
                        if let Some(row) = h.row {
                            sink.leftovers.push((row, h.watermark, ROLE_CHUNK));
                        }
                    }
                } else {
                    close(ctx, STATUS_INCOMPLETE, "the input ended", sink);
                }
            }
        }
    }
}

/// Records a chunk as held.
pub(super) fn absorb(ctx: &mut Ctx, c: &Chunk<'_>, held: Held) {
    ctx.last_chunk_id = ctx.last_chunk_id.max(c.chunk_id);
    ctx.last_compression = c.compression.map(str::to_owned);
    ctx.last_uncompressed = c.uncompressed;
    ctx.last_broker_ts = c.broker_ts;
    ctx.last_broker_index = c.broker_index;
    ctx.encrypted |= c.encrypted;
    ctx.held.push(held);
}
