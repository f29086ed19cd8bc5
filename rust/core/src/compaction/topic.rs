//! The in-process compactor a binding holds: plain or strategic behind one
//! interface, built from plain option values (checked by [`crate::compaction::CompactOptions`]).

use std::collections::HashSet;

use arrow_array::RecordBatch;

use super::builtin::StatFields;
use super::compactor::Compactor;
use super::strategic::StrategicCompactor;
use super::strategy::Strategy;
use super::CompactOptions;
use crate::error::Result;

/// Plain compaction, or strategic compaction with a strategy `S`.
pub enum TopicCompactor<S: Strategy> {
    Plain(Compactor),
    Strategic(StrategicCompactor<S>),
}

impl<S: Strategy> TopicCompactor<S> {
    /// Strategic when `strategy` is given; either skips the `aborted`
    /// transactions' messages.
    pub fn new(
        opts: CompactOptions,
        strategy: Option<S>,
        aborted: HashSet<(u64, u64)>,
    ) -> Result<Self> {
        Ok(match strategy {
            None => Self::Plain(Compactor::new(opts).with_aborted_transactions(aborted)),
            Some(s) => Self::Strategic(
                StrategicCompactor::new(opts, s)?.with_aborted_transactions(aborted),
            ),
        })
    }

    /// Phase one over one batch of entries.
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            Self::Plain(c) => c.observe(batch),
            Self::Strategic(c) => c.observe(batch),
        }
    }

    /// Phase two over the same batch: its compacted entries.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        match self {
            Self::Plain(c) => c.write(batch),
            Self::Strategic(c) => c.write(batch),
        }
    }

    /// The counters so far, by name.
    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        match self {
            Self::Plain(c) => c.stats().fields(),
            Self::Strategic(c) => c.stats().fields(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::strategy::LatestWins;

    #[test]
    fn plain_and_strategic_report_their_own_counters() {
        let opts = CompactOptions::default();
        let plain = TopicCompactor::<LatestWins>::new(opts, None, HashSet::new()).unwrap();
        let strategic = TopicCompactor::new(opts, Some(LatestWins), HashSet::new()).unwrap();
        let names = |c: &TopicCompactor<LatestWins>| -> Vec<&str> {
            c.stats().into_iter().map(|(n, _)| n).collect()
        };
        assert!(names(&plain).contains(&"keys") && !names(&plain).contains(&"accepted"));
        assert!(names(&strategic).contains(&"accepted") && !names(&strategic).contains(&"keys"));
        assert!(plain.stats().iter().all(|&(_, v)| v == 0));
    }
}
