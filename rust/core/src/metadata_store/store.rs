//! The store itself, as a reader sees it: nodes by path ([`MetadataStore`]),
//! and an in-memory one ([`MemoryStore`]) for tests and for callers that
//! hold the nodes already.

use std::collections::BTreeMap;

use super::MetadataError;

/// The read side of a Pulsar metadata store (ZooKeeper, a standalone's
/// RocksDB, ...). A failure is [`MetadataError::Io`]; an absent node is
/// `Ok(None)` (no children: an empty list).
pub trait MetadataStore {
    /// The node's data, or `None` when the node does not exist.
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, MetadataError>;
    /// The names of the node's children, sorted (empty when it does not exist).
    fn children(&self, path: &str) -> Result<Vec<String>, MetadataError>;
}

/// Nodes held in memory, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryStore(pub BTreeMap<String, Vec<u8>>);

impl MemoryStore {
    /// Adds (or replaces) the node at `path`.
    pub fn put(&mut self, path: impl Into<String>, data: impl Into<Vec<u8>>) -> &mut Self {
        self.0.insert(path.into(), data.into());
        self
    }
}

impl MetadataStore for MemoryStore {
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, MetadataError> {
        Ok(self.0.get(path).cloned())
    }

    fn children(&self, path: &str) -> Result<Vec<String>, MetadataError> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut out: Vec<String> = (self.0.range(prefix.clone()..))
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&prefix))
            .map(|k| {
                k[prefix.len()..]
                    .split('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        out.dedup();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_one_level_down() {
        let mut s = MemoryStore::default();
        s.put("/a/b/c", "x")
            .put("/a/b", "y")
            .put("/a/d", "")
            .put("/ab", "");
        assert_eq!(s.children("/a").unwrap(), ["b", "d"]);
        assert_eq!(s.children("/a/b/").unwrap(), ["c"]);
        assert!(s.children("/z").unwrap().is_empty());
        assert_eq!(s.get("/a/b").unwrap().as_deref(), Some(&b"y"[..]));
        assert_eq!(s.get("/a/x").unwrap(), None);
    }
}
