//! The spec's rules for chunk reassembly and regressions shaped after
//! Pulsar's reported bugs, over the harness in `main.rs`.

use super::*;

#[test]
fn a_table_reassembles_as_its_batches_and_gives_its_schema_without_any() {
    let topic = chunks(&payload(5_000, 3), "p", 1, Codec::None, 2_000);
    let input = decode(&topic);
    let one = std::slice::from_ref(&input);
    let (out, schema) = reassemble_table(input.schema(), one, unlimited()).unwrap();
    assert_eq!(rows(&out), run(&topic, unlimited()));
    assert_eq!(schema, output_schema(&input.schema()));
    let (none, empty_schema) = reassemble_table(input.schema(), &[], unlimited()).unwrap();
    assert!(none.is_empty());
    assert_eq!(empty_schema, schema);
}

#[test]
fn interleaved_messages_rebuild_with_first_chunk_metadata_and_last_chunk_position() {
    let a = payload(25_000, 1);
    let b = payload(9_000, 2);
    let ca = chunks(&a, "prod-a", 5, Codec::Lz4, 4_000);
    let cb = chunks(&b, "prod-b", 9, Codec::Zstd, 1_500);
    assert!(ca.len() >= 3 && cb.len() >= 2);
    // a0 b0 plain a1.. b1.. : interleaved producers with a plain message between.
    let mut topic = vec![ca[0].clone(), cb[0].clone(), single(b"plain", T0 + 50)];
    topic.extend(ca[1..].iter().cloned());
    topic.extend(cb[1..].iter().cloned());
    let out = run(&topic, ReassemblyOptions::default());
    assert_accounted(&topic, &out);
    assert_eq!(statuses(&out), ["complete", "complete"]);
    // The plain message passes through unchanged, at its place.
    assert_eq!(out[0].value.as_deref(), Some(&b"plain"[..]));
    assert_eq!((out[0].ledger, out[0].entry), pos(2));
    assert!(out[0].status.is_none() && out[0].chunks.is_none() && out[0].first.is_none());
    let ra = out
        .iter()
        .find(|r| r.uuid.as_deref() == Some("prod-a-5"))
        .unwrap();
    assert_eq!(ra.value.as_deref(), Some(&a[..]));
    assert_eq!(ra.error, None);
    assert_eq!(ra.first, Some(pos(0)));
    let last_a = 3 + ca.len() - 2;
    assert_eq!((ra.ledger, ra.entry), pos(last_a));
    assert_eq!(ra.key.as_deref(), Some("key-5"));
    assert_eq!(ra.chunk_id, Some(0), "metadata of the first chunk");
    let expected: Vec<_> = std::iter::once(pos(0))
        .chain((3..=last_a).map(pos))
        .collect();
    assert_eq!(ra.chunks.as_deref(), Some(&expected[..]));
    let rb = out
        .iter()
        .find(|r| r.uuid.as_deref() == Some("prod-b-9"))
        .unwrap();
    assert_eq!(rb.value.as_deref(), Some(&b[..]));
    assert_eq!(rb.first, Some(pos(1)));
    // Output order: rows as decided, a message at its last chunk.
    assert_eq!(out.len(), 3);
    assert!(out[1].uuid.as_deref() == Some("prod-a-5"));
}

#[test]
fn resent_chunks_restart_the_message_pulsar_21070() {
    // Producer resend after reconnect: 0 1 | 0 1 2 (the Java consumer failed to
    // deliver this before apache/pulsar#21070).
    let v = payload(3_000, 3);
    let c = chunks(&v, "p", 0, Codec::None, 1_000);
    let topic = vec![
        c[0].clone(),
        c[1].clone(),
        c[0].clone(),
        c[1].clone(),
        c[2].clone(),
    ];
    let out = run(&topic, ReassemblyOptions::default());
    assert_accounted(&topic, &out);
    assert_eq!(statuses(&out), ["incomplete", "complete"]);
    assert_eq!(out[0].chunks.as_deref(), Some(&[pos(0), pos(1)][..]));
    assert!(
        out[0]
            .error
            .as_deref()
            .unwrap()
            .contains("restarted by a new chunk 0 at 10:2"),
        "{:?}",
        out[0].error
    );
    assert_eq!(out[1].value.as_deref(), Some(&v[..]));
    assert_eq!(
        out[1].chunks.as_deref(),
        Some(&[pos(2), pos(3), pos(4)][..])
    );
    assert_eq!(out[1].first, Some(pos(2)));
}

#[test]
fn duplicated_chunks_are_ignored_pulsar_20948() {
    // 0 1 2 1 2 3: the broker persisted chunks 1 and 2 twice (apache/pulsar#20948).
    let v = payload(4_000, 4);
    let c = chunks(&v, "p", 0, Codec::None, 1_000);
    assert_eq!(c.len(), 4);
    let topic = vec![
        c[0].clone(),
        c[1].clone(),
        c[2].clone(),
        c[1].clone(),
        c[2].clone(),
        c[3].clone(),
    ];
    let out = run(&topic, ReassemblyOptions::default());
    assert_accounted(&topic, &out);
    assert_eq!(statuses(&out), ["duplicate", "duplicate", "complete"]);
    assert_eq!(out[2].value.as_deref(), Some(&v[..]));
    assert_eq!(
        out[2].chunks.as_deref(),
        Some(&[pos(0), pos(1), pos(2), pos(5)][..])
    );
    assert_eq!(out[0].chunks.as_deref(), Some(&[pos(3)][..]));
    assert!(out[0]
        .error
        .as_deref()
        .unwrap()
        .contains("already held from 10:1"));
    assert_eq!(out[0].value, None);
}

#[test]
fn out_of_order_and_mid_message_starts_are_incomplete_pulsar_client_cpp_587() {
    let v = payload(3_000, 5);
    let c = chunks(&v, "p", 1, Codec::None, 1_000);
    let w = payload(2_000, 6);
    let d = chunks(&w, "p", 2, Codec::Zlib, 700);
    // Reading from the middle of message 1 (chunks 1, 2), then message 2 out of
    // order (0, 2, 1), then message 2 resent whole.
    let mut topic = vec![
        c[1].clone(),
        c[2].clone(),
        d[0].clone(),
        d[2].clone(),
        d[1].clone(),
    ];
    topic.extend(d.iter().cloned());
    let out = run(&topic, ReassemblyOptions::default());
    assert_accounted(&topic, &out);
    assert_eq!(
        statuses(&out),
        ["incomplete", "incomplete", "incomplete", "complete"]
    );
    assert_eq!(out[0].chunks.as_deref(), Some(&[pos(0), pos(1)][..]));
    assert!(out[0]
        .error
        .as_deref()
        .unwrap()
        .contains("chunk 0 was never seen"));
    assert_eq!(out[1].chunks.as_deref(), Some(&[pos(2), pos(3)][..]));
    assert!(
        out[1]
            .error
            .as_deref()
            .unwrap()
            .contains("chunk 2 arrived at 10:3 after chunk 0 (missing 1)"),
        "{:?}",
        out[1].error
    );
    // The late chunk 1 has no message left: an orphan, closed by the resend's chunk 0.
    assert_eq!(out[2].chunks.as_deref(), Some(&[pos(4)][..]));
    assert_eq!(out[3].value.as_deref(), Some(&w[..]));
}

#[test]
fn state_is_released_after_every_message_pulsar_26676() {
    // Java's uuid queue kept every completed uuid (apache/pulsar#26676), which
    // also broke expiry. Here thousands of messages complete, and a later
    // incomplete one still expires on time with a small max_pending.
    let mut topic = Vec::new();
    for seq in 0..3_000u64 {
        topic.extend(chunks(&payload(300, seq), "p", seq, Codec::None, 100));
    }
    let stuck = chunks(&payload(300, 99_999), "q", 0, Codec::None, 100);
    topic.push(stuck[0].clone());
    // A later message whose publish time moves the stream clock past the deadline.
    topic.push(single(b"later", T0 + 10_000_000));
    let o = ReassemblyOptions {
        max_pending: Some(2),
        expire_after_ms: Some(60_000),
        ..Default::default()
    };
    let out = run(&topic, o);
    assert_accounted(&topic, &out);
    let counts = statuses(&out).iter().fold(HashMap::new(), |mut m, s| {
        *m.entry(*s).or_insert(0) += 1;
        m
    });
    assert_eq!(counts.get("complete"), Some(&3_000));
    assert_eq!(counts.get("expired"), Some(&1));
    assert_eq!(counts.len(), 2, "{counts:?}");
    let expired = out
        .iter()
        .find(|r| r.status.as_deref() == Some("expired"))
        .unwrap();
    assert!(
        expired
            .error
            .as_deref()
            .unwrap()
            .contains("expire_after_ms=60000"),
        "{:?}",
        expired.error
    );
    // Expired before the row that moved the clock.
    assert_eq!(out.last().unwrap().value.as_deref(), Some(&b"later"[..]));
}

#[test]
fn more_than_max_pending_evicts_the_oldest() {
    let msgs: Vec<Vec<Entry>> = (0..3)
        .map(|s| chunks(&payload(200, s), "p", s, Codec::None, 100))
        .collect();
    // Three messages start before any completes.
    let topic = vec![
        msgs[0][0].clone(),
        msgs[1][0].clone(),
        msgs[2][0].clone(),
        msgs[0][1].clone(),
        msgs[1][1].clone(),
        msgs[2][1].clone(),
    ];
    let o = ReassemblyOptions {
        max_pending: Some(2),
        ..Default::default()
    };
    let out = run(&topic, o);
    assert_accounted(&topic, &out);
    assert_eq!(
        statuses(&out),
        ["evicted", "incomplete", "complete", "complete"]
    );
    assert_eq!(out[0].uuid.as_deref(), Some("p-0"));
    assert!(out[0].error.as_deref().unwrap().contains("max_pending=2"));
    // Its last chunk, arriving after the eviction, is an orphan.
    assert_eq!(out[1].chunks.as_deref(), Some(&[pos(3)][..]));
    let unlimited_out = run(&topic, unlimited());
    assert_eq!(
        statuses(&unlimited_out),
        ["complete", "complete", "complete"]
    );
}

#[test]
fn expiry_follows_stream_time_not_the_message_clock() {
    let c = chunks(&payload(300, 7), "p", 0, Codec::None, 100);
    // Chunks 0 and 1, then other traffic 61 s later, then chunk 2.
    let topic = vec![
        c[0].clone(),
        c[1].clone(),
        single(b"x", T0 + 61_001),
        c[2].clone(),
    ];
    let out = run(&topic, ReassemblyOptions::default());
    assert_accounted(&topic, &out);
    assert_eq!(statuses(&out), ["expired", "incomplete"]);
    assert_eq!(out[0].chunks.as_deref(), Some(&[pos(0), pos(1)][..]));
    // Within the limit, the same chunks complete.
    let topic = vec![
        c[0].clone(),
        c[1].clone(),
        single(b"x", T0 + 59_000),
        c[2].clone(),
    ];
    assert_eq!(
        statuses(&run(&topic, ReassemblyOptions::default())),
        ["complete"]
    );
}

#[test]
fn sizes_are_bounded_before_allocating_and_bad_payloads_are_errors() {
    let v = payload(5_000, 8);
    let c = chunks(&v, "p", 0, Codec::Lz4, 1_000);
    let o = ReassemblyOptions {
        max_message_size: 1_000,
        ..Default::default()
    };
    let out = run(&c, o);
    assert_eq!(statuses(&out), ["complete"]);
    assert_eq!(out[0].value, None);
    let e = out[0].error.as_deref().unwrap();
    assert!(
        e.contains("total_chunk_msg_size") && e.contains("exceeds the limit of 1000 bytes"),
        "{e}"
    );
    // Joined bytes that are not a valid LZ4 block: an error on the complete row.
    let mut bad = Vec::new();
    for k in 0..3 {
        let md = proto::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 1,
            publish_time: T0,
            compression: Some(Codec::Lz4.to_proto()),
            uncompressed_size: Some(10_000),
            uuid: Some("p-1".into()),
            num_chunks_from_msg: Some(3),
            total_chunk_msg_size: Some(300),
            chunk_id: Some(k),
            ..Default::default()
        };
        bad.push(Entry {
            data: frame_entry(&md, &[0xff; 100], true, None),
        });
    }
    let out = run(&bad, ReassemblyOptions::default());
    assert_eq!(statuses(&out), ["complete"]);
    assert_eq!(out[0].value, None);
    let e = out[0].error.as_deref().unwrap();
    assert!(
        e.starts_with("chunked message p-1: lz4 decompression of the joined payload failed"),
        "{e}"
    );
    // Chunks that hold more bytes than total_chunk_msg_size says.
    let mut long = bad.clone();
    let md = proto::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 1,
        publish_time: T0,
        uuid: Some("p-1".into()),
        num_chunks_from_msg: Some(3),
        total_chunk_msg_size: Some(300),
        chunk_id: Some(2),
        ..Default::default()
    };
    long[2] = Entry {
        data: frame_entry(&md, &[0; 101], true, None),
    };
    let out = run(&long, ReassemblyOptions::default());
    let e = out[0].error.as_deref().unwrap();
    assert!(
        e.contains("its chunks hold more than total_chunk_msg_size=300 bytes"),
        "{e}"
    );
}

#[test]
fn message_ids_in_both_forms_for_decoded_and_reassembled_rows() {
    use pulsar_entries_core::decode::message_id_arrays;
    use pulsar_entries_core::AnyMessageId;
    let c = chunks(&payload(3_000, 11), "p", 0, Codec::None, 1_000);
    let batch_entry = Entry {
        data: encode_entry(
            &[MessageInput::default(), MessageInput::default()],
            &opts("b", 0, Codec::None, T0),
        )
        .unwrap(),
    };
    let orphan = chunks(&payload(2_000, 12), "q", 0, Codec::None, 1_000);
    let topic = vec![
        c[0].clone(),
        batch_entry,
        c[1].clone(),
        c[2].clone(),
        orphan[1].clone(),
    ];
    let decoded = decode(&topic);
    let (_, text) = message_id_arrays(&decoded).unwrap();
    let text: Vec<_> = text.iter().map(|t| t.map(str::to_owned)).collect();
    assert_eq!(
        text,
        [
            "10:0:-1",
            "10:1:-1:0",
            "10:1:-1:1",
            "10:2:-1",
            "10:3:-1",
            "10:4:-1"
        ]
        .map(|s| Some(s.to_owned()))
    );
    let out = reassemble(&[decoded], ReassemblyOptions::default()).unwrap();
    let mut ids = Vec::new();
    for b in &out {
        let (bytes, text) = message_id_arrays(b).unwrap();
        for i in 0..b.num_rows() {
            let parsed = bytes.is_valid(i).then(|| {
                AnyMessageId::deserialize(bytes.value(i))
                    .unwrap()
                    .to_string()
            });
            assert_eq!(parsed.as_deref(), text.is_valid(i).then(|| text.value(i)));
            ids.push(parsed);
        }
    }
    assert_eq!(
        ids,
        [
            Some("10:1:-1:0"),
            Some("10:1:-1:1"),
            Some("10:0:-1;10:3:-1"),
            None
        ]
        .map(|s| s.map(str::to_owned))
    );
}

#[test]
fn large_values_keep_their_place_among_other_rows() {
    // Large messages (zero-copy values) between plain rows, with few and with many
    // output segments per input batch.
    for messages in [3usize, 40] {
        let mut topic = Vec::new();
        let mut expected = Vec::new();
        for m in 0..messages {
            let value = payload(70_000 + m, 100 + m as u64);
            let c = chunks(&value, "big", m as u64, Codec::None, 30_000);
            for (k, e) in c.iter().enumerate() {
                topic.push(e.clone());
                topic.push(single(format!("p{m}-{k}").as_bytes(), T0));
                expected.push(format!("p{m}-{k}").into_bytes());
                if k + 1 == c.len() {
                    // The message's row comes right before the plain row that follows its last chunk.
                    let at = expected.len() - 1;
                    expected.insert(at, value.clone());
                }
            }
        }
        let out = run(&topic, ReassemblyOptions::default());
        assert_accounted(&topic, &out);
        let values: Vec<Vec<u8>> = out.iter().map(|r| r.value.clone().unwrap()).collect();
        assert_eq!(values.len(), expected.len());
        assert!(
            values == expected,
            "rows out of order with {messages} messages"
        );
    }
}

#[test]
fn partitioned_reassembly_needs_decode_columns() {
    let plain = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "ledger_id",
            DataType::Int64,
            false,
        )])),
        vec![Arc::new(Int64Array::from(vec![1]))],
    )
    .unwrap();
    let err = reassemble(&[plain], ReassemblyOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("input has no `entry_id` column"),
        "{err}"
    );
    let _ = BinaryArray::from_iter_values([b"x"]);
}

#[test]
fn finished_schema_is_the_output_of_the_leftovers_own_columns() {
    let input = decode(&chunks(&payload(300, 1), "p", 0, Codec::None, 100)).schema();
    let leftovers = leftover_schema(&input);
    assert!(leftovers.column_with_name(WATERMARK_COLUMN).is_some());
    let finished = finished_schema(&leftovers);
    assert_eq!(finished.fields(), output_schema(&input).fields());
    assert!(finished.column_with_name(ROLE_COLUMN).is_none());
}
