//! Phase one: the survivor of one key (spec compaction.md §4, §7).
//!
//! A [`KeyState`] folds the candidates of one key in topic order. Keys are
//! independent, so folding every key in one pass (the in-process compactor)
//! and folding each key's run separately after a shuffle (Spark) give the
//! same survivors.
//!
//! Chunked messages are kept whole, which goes beyond Pulsar: the broker
//! treats every chunk as a message of its own, so only the last chunk of a
//! retained chunked message survived and the message became unreadable. Here a
//! chunked message counts as one message at its last chunk's position once all
//! its chunks arrived in order (reassembly rules of the Java consumer: chunk 0
//! restarts the message, a repeated chunk id is a duplicate, a gap abandons
//! it), and every one of its chunks survives with it. Chunks of a message that
//! is still incomplete at the end of the input are kept too, so that a later
//! incremental run can complete it.

use super::scan::ChunkInfo;
use super::{Order, Position};

/// One message of a key, as the fold needs it.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    pub position: Position,
    pub tombstone: bool,
    pub event_time: u64,
    pub batched: bool,
    pub chunk: Option<ChunkInfo<'a>>,
}

#[derive(Debug, Clone)]
struct Survivor {
    position: Position,
    event_time: u64,
    /// Every chunk of a chunked survivor, the last one being `position`.
    chunks: Option<Box<[Position]>>,
}

#[derive(Debug, Clone)]
struct OpenChunks {
    uuid: Box<str>,
    num_chunks: i32,
    last_chunk_id: i32,
    positions: Vec<Position>,
    event_time: u64,
}

/// The phase-one state of one key: its current survivor, plus chunked
/// messages still being assembled (almost always none).
///
/// Memory: a position and an event time per key, plus the positions of the
/// chunks of chunked survivors and of incomplete chunked messages.
#[derive(Debug, Clone, Default)]
pub struct KeyState {
    latest: Option<Survivor>,
    open: Vec<OpenChunks>,
}

impl KeyState {
    /// Applies the next message of this key (messages arrive in topic order).
    pub fn observe(&mut self, o: &Observation<'_>, order: Order) {
        let Some(chunk) = o.chunk else {
            self.offer(
                o.position,
                o.tombstone,
                o.event_time,
                o.batched,
                None,
                order,
            );
            return;
        };
        if let Some(done) = self.assemble(o, chunk) {
            // A complete chunked message acts as one non-batched message.
            self.offer(
                o.position,
                o.tombstone,
                done.event_time,
                false,
                Some(done.positions.into_boxed_slice()),
                order,
            );
        }
    }

    /// Feeds one chunk; returns the message when this chunk completes it.
    fn assemble(&mut self, o: &Observation<'_>, c: ChunkInfo<'_>) -> Option<OpenChunks> {
        let at = self.open.iter().position(|x| &*x.uuid == c.uuid);
        if c.chunk_id == 0 {
            // Chunk 0 (re)starts the message: the producer resent it from the start.
            let fresh = OpenChunks {
                uuid: c.uuid.into(),
                num_chunks: c.num_chunks,
                last_chunk_id: 0,
                positions: vec![o.position],
                event_time: o.event_time,
            };
            match at {
                Some(i) => self.open[i] = fresh,
                None => self.open.push(fresh),
            }
        } else {
            let i = at?; // an orphan chunk (its start is missing) is dropped
            let ctx = &mut self.open[i];
            if c.chunk_id <= ctx.last_chunk_id {
                return None; // a duplicate: the message continues without it
            }
            if c.chunk_id != ctx.last_chunk_id + 1 || c.num_chunks != ctx.num_chunks {
                self.open.swap_remove(i); // a gap: the message is abandoned
                return None;
            }
            ctx.last_chunk_id = c.chunk_id;
            ctx.positions.push(o.position);
            ctx.event_time = o.event_time;
        }
        let i = self.open.iter().position(|x| &*x.uuid == c.uuid)?;
        if self.open[i].last_chunk_id + 1 >= self.open[i].num_chunks {
            return Some(self.open.swap_remove(i));
        }
        None
    }

    fn offer(
        &mut self,
        position: Position,
        tombstone: bool,
        event_time: u64,
        batched: bool,
        chunks: Option<Box<[Position]>>,
        order: Order,
    ) {
        let newer = match (order, &self.latest) {
            (Order::Publish, _) | (Order::EventTime, None) => true,
            // EventTimeOrderCompactor: `>=` for single messages, `>` in batches.
            (Order::EventTime, Some(s)) if batched => event_time > s.event_time,
            (Order::EventTime, Some(s)) => event_time >= s.event_time,
        };
        if !newer {
            return; // a late message, tombstones included, changes nothing
        }
        self.latest = (!tombstone).then_some(Survivor {
            position,
            event_time,
            chunks,
        });
    }

    /// Nothing survives and nothing is pending: the key can be forgotten.
    pub fn is_empty(&self) -> bool {
        self.latest.is_none() && self.open.is_empty()
    }

    /// The current survivor's position (its last chunk for a chunked message).
    pub fn survivor(&self) -> Option<Position> {
        self.latest.as_ref().map(|s| s.position)
    }

    /// Every position to keep for this key: the survivor (all its chunks) and
    /// the chunks of messages still incomplete.
    pub fn retained(&self) -> impl Iterator<Item = Position> + '_ {
        let survivor = self.latest.iter().flat_map(|s| match &s.chunks {
            Some(chunks) => chunks.to_vec(),
            None => vec![s.position],
        });
        let open = self.open.iter().flat_map(|c| c.positions.iter().copied());
        survivor.chain(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(entry: i64, batch_index: i32, tombstone: bool, et: u64) -> Observation<'static> {
        Observation {
            position: Position::new(1, entry, batch_index),
            tombstone,
            event_time: et,
            batched: batch_index >= 0,
            chunk: None,
        }
    }

    fn chunk(entry: i64, uuid: &'static str, id: i32, n: i32) -> Observation<'static> {
        Observation {
            position: Position::new(1, entry, -1),
            tombstone: false,
            event_time: 0,
            batched: false,
            chunk: Some(ChunkInfo {
                uuid,
                chunk_id: id,
                num_chunks: n,
            }),
        }
    }

    fn kept(s: &KeyState) -> Vec<i64> {
        s.retained().map(|p| p.entry_id).collect()
    }

    #[test]
    fn publish_order_last_wins_and_tombstones_delete() {
        let mut s = KeyState::default();
        s.observe(&obs(0, -1, false, 0), Order::Publish);
        s.observe(&obs(1, 2, false, 0), Order::Publish);
        assert_eq!(s.survivor(), Some(Position::new(1, 1, 2)));
        s.observe(&obs(2, -1, true, 0), Order::Publish);
        assert!(s.is_empty());
    }

    #[test]
    fn event_time_tie_rules_and_late_tombstones() {
        let et = Order::EventTime;
        let mut s = KeyState::default();
        s.observe(&obs(0, -1, false, 10), et);
        s.observe(&obs(1, -1, false, 10), et); // single: >= wins the tie
        assert_eq!(s.survivor().unwrap().entry_id, 1);
        s.observe(&obs(2, 0, false, 10), et); // batched: needs >
        assert_eq!(s.survivor().unwrap().entry_id, 1);
        s.observe(&obs(3, -1, true, 5), et); // a late tombstone deletes nothing
        assert_eq!(s.survivor().unwrap().entry_id, 1);
        s.observe(&obs(4, -1, true, 20), et);
        assert!(s.is_empty());
        s.observe(&obs(5, -1, false, 1), et); // after a delete anything is newer
        assert_eq!(s.survivor().unwrap().entry_id, 5);
    }

    #[test]
    fn chunked_messages_survive_whole() {
        let mut s = KeyState::default();
        s.observe(&chunk(0, "u1", 0, 3), Order::Publish);
        s.observe(&chunk(1, "u1", 1, 3), Order::Publish);
        s.observe(&chunk(2, "u1", 1, 3), Order::Publish); // duplicate
        s.observe(&chunk(3, "u1", 2, 3), Order::Publish);
        assert_eq!(kept(&s), vec![0, 1, 3]);
        assert_eq!(s.survivor().unwrap().entry_id, 3);
        // A gap abandons the next message; the complete one stays.
        s.observe(&chunk(4, "u2", 0, 3), Order::Publish);
        s.observe(&chunk(5, "u2", 2, 3), Order::Publish);
        assert_eq!(kept(&s), vec![0, 1, 3]);
        // Chunk 0 again restarts; an incomplete message is kept pending.
        s.observe(&chunk(6, "u3", 0, 2), Order::Publish);
        s.observe(&chunk(7, "u3", 0, 2), Order::Publish);
        assert_eq!(kept(&s), vec![0, 1, 3, 7]);
        s.observe(&chunk(8, "u3", 1, 2), Order::Publish);
        assert_eq!(kept(&s), vec![7, 8]);
        // An orphan chunk is dropped.
        s.observe(&chunk(9, "u4", 1, 2), Order::Publish);
        assert_eq!(kept(&s), vec![7, 8]);
    }
}
