//! Topic names and the store paths they map to (spec bookkeeper.md §1.2).

use super::MetadataError;

/// A persistent topic's name, as Pulsar parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicName {
    pub tenant: String,
    /// `ns` for a V2 name, `cluster/ns` for a V1 name.
    pub namespace: String,
    /// The local name, partition suffix included if given.
    pub local: String,
}

const PARTITION_SUFFIX: &str = "-partition-";

impl TopicName {
    /// Parses `persistent://tenant/ns/topic` (V2), `persistent://prop/cluster/ns/topic`
    /// (V1), or a short name (`topic` or `tenant/ns/topic`) the way Pulsar
    /// completes it (`persistent://public/default/topic`).
    pub fn parse(name: &str) -> Result<Self, MetadataError> {
        let bad = |why: &str| MetadataError::Name(format!("topic `{name}`: {why}"));
        let rest = if let Some(r) = name.strip_prefix("persistent://") {
            r.to_string()
        } else if name.starts_with("non-persistent://") {
            return Err(bad("non-persistent topics keep no storage to read"));
        } else if name.contains("://") {
            return Err(bad("the domain must be `persistent://`"));
        } else if name.contains('/') {
            name.to_string()
        } else {
            format!("public/default/{name}")
        };
        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        let (tenant, namespace, local) = match parts.as_slice() {
            [t, ns, topic] => (*t, ns.to_string(), *topic),
            [t, cluster, ns, topic] => (*t, format!("{cluster}/{ns}"), *topic),
            _ => return Err(bad("expected persistent://tenant/namespace/topic")),
        };
        if tenant.is_empty() || namespace.split('/').any(str::is_empty) || local.is_empty() {
            return Err(bad("empty tenant, namespace or topic"));
        }
        Ok(Self {
            tenant: tenant.to_string(),
            namespace,
            local: local.to_string(),
        })
    }

    /// The full name, `persistent://tenant/ns/topic`.
    pub fn full(&self) -> String {
        format!(
            "persistent://{}/{}/{}",
            self.tenant, self.namespace, self.local
        )
    }

    /// The partition index, if this names one partition (`...-partition-N`).
    pub fn partition(&self) -> Option<i32> {
        let (_, digits) = self.local.rsplit_once(PARTITION_SUFFIX)?;
        let n: i32 = digits.parse().ok()?;
        // Only the canonical form: no sign, no leading zeros.
        (n >= 0 && n.to_string() == digits).then_some(n)
    }

    /// The partitioned topic this partition belongs to (itself otherwise).
    pub fn base(&self) -> Self {
        let local = match self.partition() {
            Some(_) => self
                .local
                .rsplit_once(PARTITION_SUFFIX)
                .map(|(b, _)| b.to_string()),
            None => None,
        };
        Self {
            local: local.unwrap_or_else(|| self.local.clone()),
            ..self.clone()
        }
    }

    /// Partition `i` of this (partitioned) topic.
    pub fn with_partition(&self, i: i32) -> Self {
        Self {
            local: format!("{}{PARTITION_SUFFIX}{i}", self.base().local),
            ..self.clone()
        }
    }

    /// The managed-ledger name: `tenant/ns/persistent/<encoded local name>`.
    pub fn managed_ledger_name(&self) -> String {
        format!(
            "{}/{}/persistent/{}",
            self.tenant,
            self.namespace,
            url_encode(&self.local)
        )
    }

    /// `/managed-ledgers/<managed-ledger name>`: the topic's ledgers.
    pub fn managed_ledger_path(&self) -> String {
        format!("/managed-ledgers/{}", self.managed_ledger_name())
    }

    /// The node of a cursor (subscription) of this topic.
    pub fn cursor_path(&self, subscription: &str) -> String {
        format!(
            "{}/{}",
            self.managed_ledger_path(),
            url_encode(subscription)
        )
    }

    /// `/admin/partitioned-topics/...`: the partition count, if partitioned.
    pub fn partitioned_metadata_path(&self) -> String {
        format!(
            "/admin/partitioned-topics/{}/{}/persistent/{}",
            self.tenant,
            self.namespace,
            url_encode(&self.base().local)
        )
    }

    /// `/schemas/tenant/ns/<base topic>`: the schema locator, shared by all partitions.
    pub fn schema_path(&self) -> String {
        format!(
            "/schemas/{}/{}/{}",
            self.tenant,
            self.namespace,
            url_encode(&self.base().local)
        )
    }
}

/// `java.net.URLEncoder.encode(s, UTF_8)`, which Pulsar's `Codec.encode` uses:
/// `a-zA-Z0-9 . - * _` stay, a space becomes `+`, every other UTF-8 byte `%XX`.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_pulsar_s_paths() {
        let t = TopicName::parse("persistent://public/default/my topic").unwrap();
        assert_eq!(
            t.managed_ledger_path(),
            "/managed-ledgers/public/default/persistent/my+topic"
        );
        let t = TopicName::parse("persistent://prop/cluster/ns/t").unwrap();
        assert_eq!(t.managed_ledger_name(), "prop/cluster/ns/persistent/t");
        let t = TopicName::parse("orders").unwrap();
        assert_eq!(t.full(), "persistent://public/default/orders");
        assert_eq!(
            t.with_partition(3).managed_ledger_path(),
            "/managed-ledgers/public/default/persistent/orders-partition-3"
        );
        assert_eq!(
            t.partitioned_metadata_path(),
            "/admin/partitioned-topics/public/default/persistent/orders"
        );
        assert_eq!(
            t.cursor_path("__compaction"),
            "/managed-ledgers/public/default/persistent/orders/__compaction"
        );
        assert_eq!(
            t.with_partition(2).schema_path(),
            "/schemas/public/default/orders"
        );
        assert_eq!(url_encode("a/b:c é"), "a%2Fb%3Ac+%C3%A9");
    }

    #[test]
    fn partitions_are_recognised_only_when_well_formed() {
        let p = TopicName::parse("persistent://t/ns/x-partition-12").unwrap();
        assert_eq!(p.partition(), Some(12));
        assert_eq!(p.base().local, "x");
        for local in ["x-partition-", "x-partition-01", "x-partition--1", "x"] {
            assert_eq!(
                TopicName::parse(&format!("t/ns/{local}"))
                    .unwrap()
                    .partition(),
                None,
                "{local}"
            );
        }
    }

    #[test]
    fn bad_names_say_why() {
        for (name, why) in [
            ("non-persistent://t/ns/x", "non-persistent"),
            ("http://t/ns/x", "domain"),
            ("persistent://t/ns", "expected"),
            ("persistent://t//x", "empty"),
        ] {
            let e = TopicName::parse(name).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(name), "{name}: {e}");
        }
    }
}
