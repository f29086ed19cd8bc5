//! Property tests over random chunkings (every codec, interleaving,
//! duplicates, restarts, gaps), in process and partitioned (Spark-shaped).

use super::*;

/// How one message's chunks reach the topic.
#[derive(Debug, Clone)]
enum Shape {
    Whole,
    /// Chunk `k` (modulo the count) stored again right after chunk `at`.
    Duplicate {
        k: usize,
        at: usize,
    },
    /// The first `m` chunks, then the whole message again.
    Restart {
        m: usize,
    },
    /// Chunk `k` lost.
    Missing {
        k: usize,
    },
    /// Reading starts at chunk `k`.
    FromMiddle {
        k: usize,
    },
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        4 => Just(Shape::Whole),
        1 => (0usize..8, 0usize..8).prop_map(|(k, at)| Shape::Duplicate { k, at }),
        1 => (1usize..8).prop_map(|m| Shape::Restart { m }),
        1 => (0usize..8).prop_map(|k| Shape::Missing { k }),
        1 => (1usize..8).prop_map(|k| Shape::FromMiddle { k }),
    ]
}

#[derive(Debug, Clone)]
struct Spec {
    size: usize,
    chunk: usize,
    codec: usize,
    shape: Shape,
}

fn spec() -> impl Strategy<Value = Spec> {
    (0usize..6_000, 200usize..2_000, 0usize..5, shape()).prop_map(|(size, chunk, codec, shape)| {
        Spec {
            size,
            chunk,
            codec,
            shape,
        }
    })
}

/// The stored sequence of one message and whether it must come out whole.
fn layout(i: usize, s: &Spec) -> (Vec<Entry>, Vec<u8>, bool) {
    let value = payload(s.size, i as u64 + 1);
    let c = chunks(
        &value,
        &format!("producer-{}", i % 3),
        i as u64,
        Codec::ALL[s.codec],
        s.chunk,
    );
    let n = c.len();
    if n < 2 {
        return (c, value, true);
    }
    let seq = match s.shape {
        Shape::Whole => c.clone(),
        Shape::Duplicate { k, at } => {
            // A repeated chunk 0 is a restart, not a duplicate: repeat 1..=at.
            let at = 1 + at % (n - 1);
            let k = 1 + k % at;
            let mut v = c[..=at].to_vec();
            v.push(c[k].clone());
            v.extend(c[at + 1..].iter().cloned());
            v
        }
        Shape::Restart { m } => {
            let mut v = c[..m.min(n - 1)].to_vec();
            v.extend(c.iter().cloned());
            v
        }
        Shape::Missing { k } => {
            let mut v = c.clone();
            v.remove(k % n);
            return (v, value, false);
        }
        Shape::FromMiddle { k } => return (c[k.min(n - 1)..].to_vec(), value, false),
    };
    (seq, value, true)
}

/// Interleaves per-message sequences, keeping each one's order.
fn interleave(seqs: Vec<Vec<Entry>>, picks: &[usize]) -> Vec<Entry> {
    let mut queues: Vec<std::collections::VecDeque<Entry>> =
        seqs.into_iter().map(Into::into).collect();
    let mut out = Vec::new();
    let mut p = 0;
    while queues.iter().any(|q| !q.is_empty()) {
        let live: Vec<usize> = (0..queues.len())
            .filter(|&i| !queues[i].is_empty())
            .collect();
        let i = live[picks.get(p).copied().unwrap_or(0) % live.len()];
        p += 1;
        out.push(queues[i].pop_front().unwrap());
    }
    out
}

/// Equal row multisets; on failure shows only the differing rows.
fn assert_same(whole: &[Row], parts: &[Row]) {
    if whole != parts {
        let only_whole: Vec<_> = whole.iter().filter(|r| !parts.contains(r)).collect();
        let only_parts: Vec<_> = parts.iter().filter(|r| !whole.contains(r)).collect();
        panic!(
            "in-process and partitioned results differ ({} vs {} rows)\nonly in-process: {only_whole:#?}\nonly partitioned: {only_parts:#?}",
            whole.len(),
            parts.len()
        );
    }
}

fn canonical(mut r: Vec<Row>) -> Vec<Row> {
    r.sort();
    r
}

/// Runs the partition pass on `cuts`-separated slices and finishes leftovers.
fn run_partitioned(batch: &RecordBatch, cuts: &[usize], o: ReassemblyOptions) -> Vec<Row> {
    let (mut done, finished) = run_partitioned_split(batch, cuts, o);
    done.extend(finished);
    done
}

/// The partition passes' rows and the finishing pass's rows.
fn run_partitioned_split(
    batch: &RecordBatch,
    cuts: &[usize],
    o: ReassemblyOptions,
) -> (Vec<Row>, Vec<Row>) {
    let n = batch.num_rows();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (n + 1)).collect();
    bounds.push(0);
    bounds.push(n);
    bounds.sort();
    bounds.dedup();
    let publish = arrow_cast::cast(
        batch.column_by_name("publish_time").unwrap(),
        &DataType::Int64,
    )
    .unwrap();
    let publish = publish.as_primitive::<Int64Type>();
    let mut done = Vec::new();
    let mut leftovers = Vec::new();
    let mut seed: Option<i64> = None;
    for w in bounds.windows(2) {
        let part = batch.slice(w[0], w[1] - w[0]);
        let seeds: HashMap<i32, i64> = seed.map(|s| (-1, s)).into_iter().collect();
        let r = reassemble_partition(&[part], o, &seeds).unwrap();
        done.extend(r.done);
        leftovers.push(r.leftovers);
        for i in w[0]..w[1] {
            if publish.is_valid(i) {
                seed = Some(seed.map_or(publish.value(i), |s| s.max(publish.value(i))));
            }
        }
    }
    let finals: HashMap<i32, i64> = seed.map(|s| (-1, s)).into_iter().collect();
    let finished = finish_leftovers(&leftovers, o, &finals).unwrap();
    (rows(&done), rows(&finished))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_chunkings_come_out_whole_and_accounted(
        specs in proptest::collection::vec(spec(), 1..7),
        picks in proptest::collection::vec(0usize..16, 0..200),
        plain_every in 2usize..9,
    ) {
        let mut seqs = Vec::new();
        let mut expected = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let (seq, value, whole) = layout(i, s);
            seqs.push(seq);
            expected.push((format!("producer-{}-{i}", i % 3), value, whole));
        }
        let mut topic = interleave(seqs, &picks);
        // Non-chunk traffic between chunks.
        let mut k = 0;
        while k < topic.len() {
            topic.insert(k, single(format!("plain-{k}").as_bytes(), T0 + k as u64));
            k += plain_every;
        }
        let out = run(&topic, unlimited());
        assert_accounted(&topic, &out);
        for (uuid, value, whole) in &expected {
            let complete: Vec<&Row> = out.iter()
                .filter(|r| r.uuid.as_deref() == Some(uuid) && r.status.as_deref() == Some("complete"))
                .collect();
            // A message that fits one chunk is a plain entry (no uuid).
            let plain = out.iter().any(|r| r.status.is_none() && r.value.as_deref() == Some(&value[..]));
            if *whole {
                prop_assert!(plain || complete.len() == 1, "{uuid} must complete once: {:#?}", chunked_rows(&out).iter().map(|r| (&r.uuid, &r.status, &r.error)).collect::<Vec<_>>());
                for r in complete {
                    prop_assert_eq!(r.value.as_deref(), Some(&value[..]));
                    prop_assert_eq!(r.error.as_deref(), None);
                }
            } else {
                prop_assert!(complete.is_empty(), "{} must not complete", uuid);
            }
        }
    }

    #[test]
    fn partitioned_reassembly_equals_in_process(
        specs in proptest::collection::vec(spec(), 1..6),
        picks in proptest::collection::vec(0usize..16, 0..200),
        cuts in proptest::collection::vec(0usize..400, 0..6),
        clock in proptest::collection::vec(0u64..40_000, 0..12),
        expire in prop_oneof![Just(None), (1i64..100_000).prop_map(Some)],
    ) {
        let mut seqs = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            seqs.push(layout(i, s).0);
        }
        let mut topic = interleave(seqs, &picks);
        // Clock ticks from other producers, so expiry decisions vary.
        for (j, t) in clock.iter().enumerate() {
            let at = (j * 7 + *t as usize) % (topic.len() + 1);
            topic.insert(at, single(b"tick", T0 + t));
        }
        let o = ReassemblyOptions { max_pending: None, expire_after_ms: expire, ..Default::default() };
        let batch = decode(&topic);
        let whole = canonical(rows(&reassemble(std::slice::from_ref(&batch), o).unwrap()));
        let parts = canonical(run_partitioned(&batch, &cuts, o));
        assert_same(&whole, &parts);
    }

    #[test]
    fn partition_pass_evicts_exactly_within_a_partition(
        specs in proptest::collection::vec(spec(), 1..8),
        picks in proptest::collection::vec(0usize..16, 0..200),
        max_pending in 1usize..4,
    ) {
        // One partition: the partition pass plus finishing equals in-process
        // reassembly with eviction on.
        let seqs: Vec<_> = specs.iter().enumerate().map(|(i, s)| layout(i, s).0).collect();
        let topic = interleave(seqs, &picks);
        let o = ReassemblyOptions { max_pending: Some(max_pending), ..Default::default() };
        let batch = decode(&topic);
        let whole = canonical(rows(&reassemble(std::slice::from_ref(&batch), o).unwrap()));
        let parts = canonical(run_partitioned(&batch, &[], o));
        assert_same(&whole, &parts);
    }

    #[test]
    fn partition_pass_is_exact_for_messages_inside_one_partition(
        specs in proptest::collection::vec(spec(), 1..8),
        picks in proptest::collection::vec(0usize..16, 0..200),
        cuts in proptest::collection::vec(0usize..400, 0..6),
        max_pending in 1usize..4,
    ) {
        // With eviction on and any cuts, every uuid whose chunks all sit in one
        // partition gets exactly the in-process rows: a message's fate depends
        // only on messages that started after it (FIFO eviction).
        let seqs: Vec<_> = specs.iter().enumerate().map(|(i, s)| layout(i, s).0).collect();
        let topic = interleave(seqs, &picks);
        let o = ReassemblyOptions { max_pending: Some(max_pending), ..Default::default() };
        let batch = decode(&topic);
        let n = batch.num_rows();
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (n + 1)).collect();
        bounds.extend([0, n]);
        bounds.sort();
        let part_of = |i: usize| bounds.iter().filter(|&&b| b <= i).count();
        let decoded = rows_of_decode(&topic);
        let mut home: HashMap<String, std::collections::HashSet<usize>> = HashMap::new();
        for (i, r) in decoded.iter().enumerate() {
            if let Some(u) = &r.uuid {
                home.entry(u.clone()).or_default().insert(part_of(i));
            }
        }
        let (done, finished) = run_partitioned_split(&batch, &cuts, o);
        // Messages started and decided inside one partition (not pending at its end).
        let spanning: std::collections::HashSet<String> = finished.iter().filter_map(|r| r.uuid.clone()).collect();
        let local = |r: &Row| r.uuid.as_ref().is_some_and(|u| home[u].len() == 1 && !spanning.contains(u));
        let whole: Vec<Row> = canonical(rows(&reassemble(std::slice::from_ref(&batch), o).unwrap()))
            .into_iter().filter(local).collect();
        let parts: Vec<Row> = canonical(done).into_iter().filter(local).collect();
        prop_assert_eq!(parts.len(), whole.len());
        assert_same(&whole, &parts);
    }
}
