//! The ordered list of payload processors `decode` tries.

use std::sync::Arc;

use crate::format::metadata::MessageMetadataView;

use super::api::PayloadProcessor;
use super::kafka::KafkaProcessor;
use super::pulsar::PulsarProcessor;

/// The ordered processor list `decode` tries.
#[derive(Clone)]
pub struct Processors(Vec<Arc<dyn PayloadProcessor>>);

impl Default for Processors {
    /// `[kafka, pulsar]`.
    fn default() -> Self {
        Processors(vec![
            Arc::new(KafkaProcessor::new()),
            Arc::new(PulsarProcessor::new()),
        ])
    }
}

impl Processors {
    pub fn new(list: Vec<Arc<dyn PayloadProcessor>>) -> Self {
        Processors(list)
    }

    pub fn select(&self, md: &MessageMetadataView<'_>) -> Option<&dyn PayloadProcessor> {
        self.0
            .iter()
            .find(|p| p.selector().matches(md))
            .map(|p| p.as_ref())
    }

    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|p| p.name()).collect()
    }
}
