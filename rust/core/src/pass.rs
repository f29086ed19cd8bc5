//! One shape for every streaming pass over record batches: push batches in
//! order, then finish. The Python bindings wrap any [`BatchPass`] the same
//! way (one generic `push`/`finish`), so each pass needs no binding code of
//! its own beyond its constructor.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::chunks::{PartitionReassembler, PartitionResult};
use crate::compaction::distributed::SurvivorFolder;
use crate::compaction::strategic_distributed::{PartitionPass, StrategicFold};
use crate::compaction::strategy::Strategy;
use crate::error::{EntryError, Result};

/// A stateful pass: `push` each input batch in order, then `finish` once.
pub trait BatchPass {
    /// What one push (or the finish) gives.
    type Output;

    /// Folds one input batch.
    fn push_batch(&mut self, batch: &RecordBatch) -> Result<Self::Output>;

    /// The input's end: what the pass still holds.
    fn finish_pass(&mut self) -> Result<Self::Output>;

    /// The schema of the rows the pass gives (the decided rows, for a pass
    /// that also hands rows on).
    fn schema(&self) -> SchemaRef;

    /// The outputs of several pushes as one, in order.
    fn merge(&self, outputs: Vec<Self::Output>) -> Result<Self::Output>;

    /// Pushes every batch and merges what they give.
    fn push_all(&mut self, batches: &[RecordBatch]) -> Result<Self::Output> {
        let outputs = batches
            .iter()
            .map(|b| self.push_batch(b))
            .collect::<Result<Vec<_>>>()?;
        self.merge(outputs)
    }
}

/// A pass whose `push` and `finish` each give one batch of `$schema` rows.
macro_rules! one_batch_pass {
    ($ty:ty, $schema:path $(, $g:ident: $bound:path)?) => {
        impl$(<$g: $bound>)? BatchPass for $ty {
            type Output = Vec<RecordBatch>;
            fn schema(&self) -> SchemaRef {
                $schema()
            }
            fn push_batch(&mut self, batch: &RecordBatch) -> Result<Self::Output> {
                Ok(vec![self.push(batch)?])
            }
            fn finish_pass(&mut self) -> Result<Self::Output> {
                Ok(vec![self.finish()])
            }
            fn merge(&self, outputs: Vec<Self::Output>) -> Result<Self::Output> {
                Ok(outputs.into_iter().flatten().collect())
            }
        }
    };
}

one_batch_pass!(
    SurvivorFolder,
    crate::compaction::distributed::survivor_schema
);
one_batch_pass!(
    PartitionPass,
    crate::compaction::strategic_distributed::row_schema
);
one_batch_pass!(
    StrategicFold<S>,
    crate::compaction::strategic_distributed::row_schema,
    S: Strategy
);

impl BatchPass for PartitionReassembler {
    type Output = PartitionResult;
    fn schema(&self) -> SchemaRef {
        PartitionReassembler::schema(self)
    }
    fn push_batch(&mut self, batch: &RecordBatch) -> Result<Self::Output> {
        self.push(batch)
    }
    fn finish_pass(&mut self) -> Result<Self::Output> {
        self.finish()
    }
    /// The decided rows in order, and one batch of every leftover row.
    fn merge(&self, outputs: Vec<Self::Output>) -> Result<Self::Output> {
        let mut done = Vec::new();
        let mut left = Vec::with_capacity(outputs.len());
        for p in outputs {
            done.extend(p.done);
            left.push(p.leftovers);
        }
        let leftovers = arrow_select::concat::concat_batches(&self.leftover_schema(), &left)
            .map_err(|e| EntryError::Schema(e.to_string()))?;
        Ok(PartitionResult { done, leftovers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::distributed::{candidate_schema, survivor_schema};
    use crate::compaction::Order;

    #[test]
    fn push_all_merges_in_order_and_finish_closes() {
        let mut folder = SurvivorFolder::new(Order::Publish);
        let empty = RecordBatch::new_empty(candidate_schema());
        let out = folder.push_all(&[empty.clone(), empty]).unwrap();
        assert_eq!(out.len(), 2);
        assert!(out
            .iter()
            .all(|b| b.schema() == survivor_schema() && b.num_rows() == 0));
        assert_eq!(folder.finish_pass().unwrap().len(), 1);
        assert_eq!(BatchPass::schema(&folder), survivor_schema());
    }

    #[test]
    fn partition_reassembler_merges_leftovers_into_one_batch() {
        use crate::chunks::ReassemblyOptions;
        let schema = crate::decode::message_schema();
        let mut r = PartitionReassembler::new(
            schema.clone(),
            ReassemblyOptions::default(),
            &Default::default(),
        )
        .unwrap();
        let empty = RecordBatch::new_empty(schema);
        let out = r.push_all(&[empty.clone(), empty]).unwrap();
        assert!(out.done.is_empty());
        assert_eq!(out.leftovers.num_rows(), 0);
        assert_eq!(out.leftovers.schema(), r.leftover_schema());
        let end = r.finish_pass().unwrap();
        assert_eq!(end.leftovers.num_rows(), 0);
    }
}
