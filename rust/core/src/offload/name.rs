//! Object names (DataBlockUtils): `<uuid>-ledger-<ledgerId>` and its
//! `-index`, and the streaming `<uuid>` / `<uuid>-index`.

use std::fmt;

/// Data or index object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectRole {
    Data,
    Index,
}

/// A parsed offload object name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectName {
    /// The offload context's UUID, lowercase as Java's `UUID.toString()` writes it.
    pub uuid: String,
    /// `Some` for ledger-based objects; streaming objects span ledgers.
    pub ledger_id: Option<i64>,
    pub role: ObjectRole,
}

/// Java's `UUID.toString()` form: 8-4-4-4-12 hex digits. Upper case is
/// accepted (object stores may be case-preserving copies), then normalized.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

impl ObjectName {
    /// Parses a bare object name (no directory part); `None` when it is not
    /// an offload object name.
    pub fn parse(name: &str) -> Option<Self> {
        let (stem, role) = match name.strip_suffix("-index") {
            Some(stem) => (stem, ObjectRole::Index),
            None => (name, ObjectRole::Data),
        };
        let (uuid, ledger_id) = match stem.split_once("-ledger-") {
            Some((uuid, id)) => {
                // Java formats the id with %d: ASCII digits, no sign, no padding.
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                if id.len() > 1 && id.starts_with('0') {
                    return None;
                }
                (uuid, Some(id.parse::<i64>().ok()?))
            }
            None => (stem, None),
        };
        is_uuid(uuid).then(|| ObjectName {
            uuid: uuid.to_ascii_lowercase(),
            ledger_id,
            role,
        })
    }

    /// The data object's name for the same offload.
    pub fn data(&self) -> ObjectName {
        ObjectName {
            role: ObjectRole::Data,
            ..self.clone()
        }
    }

    /// The index object's name for the same offload.
    pub fn index(&self) -> ObjectName {
        ObjectName {
            role: ObjectRole::Index,
            ..self.clone()
        }
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uuid)?;
        if let Some(id) = self.ledger_id {
            write!(f, "-ledger-{id}")?;
        }
        if self.role == ObjectRole::Index {
            f.write_str("-index")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

    #[test]
    fn parses_all_four_names_and_round_trips() {
        for (name, ledger, role) in [
            (format!("{U}-ledger-42"), Some(42), ObjectRole::Data),
            (format!("{U}-ledger-42-index"), Some(42), ObjectRole::Index),
            (U.to_string(), None, ObjectRole::Data),
            (format!("{U}-index"), None, ObjectRole::Index),
        ] {
            let n = ObjectName::parse(&name).unwrap();
            assert_eq!((n.uuid.as_str(), n.ledger_id, n.role), (U, ledger, role));
            assert_eq!(n.to_string(), name);
        }
        let n = ObjectName::parse(&format!("{U}-ledger-0")).unwrap();
        assert_eq!(n.index().to_string(), format!("{U}-ledger-0-index"));
        assert_eq!(n.index().data(), n);
    }

    #[test]
    fn rejects_other_names() {
        for name in [
            "entries.parquet",
            "3f2504e0-4f89-11d3-9a0c-0305e82c330",
            &format!("{U}-ledger-"),
            &format!("{U}-ledger--1"),
            &format!("{U}-ledger-01"),
            &format!("{U}-ledger-1x"),
            &format!("{U}-ledger-99999999999999999999"),
            &format!("{U}.crc"),
            &format!("x{U}"),
        ] {
            assert_eq!(ObjectName::parse(name), None, "{name}");
        }
    }
}
