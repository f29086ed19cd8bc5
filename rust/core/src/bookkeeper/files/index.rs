//! Reads at the places the DbLedgerStorage `locations` index gives.

use std::io::{Read, Seek, SeekFrom};

use super::record::{read_at, FoundEntry, HEADER_LEN, MIN_ENTRY};

/// Reads the copy the DbLedgerStorage `locations` index points to: `pos` is
/// the offset of the stored entry in the log (after its 4-byte size), and the
/// record there must hold `ledger_id`/`entry_id`. An error names the file and
/// offset and says what is there instead.
pub fn read_at_location<R: Read + Seek>(
    r: &mut R,
    file: &str,
    pos: u64,
    ledger_id: i64,
    entry_id: i64,
) -> Result<FoundEntry, String> {
    let what = format!(
        "the locations index puts ledger {ledger_id} entry {entry_id} at {file} offset {pos}"
    );
    let len = r
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("{what}: cannot read: {e}"))?;
    if pos < HEADER_LEN + 4 || pos > len {
        return Err(format!(
            "{what}, outside the entry records of the {len}-byte file"
        ));
    }
    let mut head = [0u8; 20];
    match read_at(r, pos - 4, &mut head) {
        Ok(true) => {}
        Ok(false) => return Err(format!("{what}, past the end of the {len}-byte file")),
        Err(e) => return Err(format!("{what}: read failed: {e}")),
    }
    let size = i32::from_be_bytes(head[0..4].try_into().expect("4"));
    let l = i64::from_be_bytes(head[4..12].try_into().expect("8"));
    let e = i64::from_be_bytes(head[12..20].try_into().expect("8"));
    if size < MIN_ENTRY as i32 || pos + size as u64 > len {
        return Err(format!(
            "{what}, where the record size is {size} (the file ends at {len})"
        ));
    }
    if (l, e) != (ledger_id, entry_id) {
        return Err(format!(
            "{what}, where the record holds ledger {l} entry {e}"
        ));
    }
    let mut stored = vec![0u8; size as usize];
    match read_at(r, pos, &mut stored) {
        Ok(true) => {}
        Ok(false) => return Err(format!("{what}, past the end of the file")),
        Err(e) => return Err(format!("{what}: read failed: {e}")),
    }
    Ok(FoundEntry {
        ledger_id,
        entry_id,
        file: file.to_string(),
        offset: pos,
        stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeper::files::test_support::{header, record, stored};
    use crate::bookkeeper::{DigestType, Digester};
    use std::io::Cursor;

    #[test]
    fn a_location_must_hold_the_entry_the_index_names() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        let a = stored(&d, 3, 0, -1, b"a");
        record(&mut log, &a);
        record(&mut log, &stored(&d, 3, 1, 0, b"b"));
        let second = 1024 + 4 + a.len() as u64 + 4;
        let mut c = Cursor::new(&log);
        let got = read_at_location(&mut c, "0.log", second, 3, 1).unwrap();
        assert_eq!((got.entry_id, got.offset), (1, second));
        let e = read_at_location(&mut c, "0.log", 1028, 3, 1).unwrap_err();
        assert!(
            e.contains("0.log offset 1028") && e.contains("holds ledger 3 entry 0"),
            "{e}"
        );
        let e = read_at_location(&mut c, "0.log", 1 << 31, 3, 1).unwrap_err();
        assert!(e.contains("outside the entry records"), "{e}");
        let e = read_at_location(&mut c, "0.log", 1030, 3, 1).unwrap_err();
        assert!(
            e.contains("record size") || e.contains("holds ledger"),
            "{e}"
        );
        let e = read_at_location(&mut c, "0.log", 12, 3, 1).unwrap_err();
        assert!(e.contains("outside the entry records"), "{e}");
    }
}
