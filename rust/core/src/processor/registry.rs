//! The ordered list of payload processors `decode` tries.

use std::sync::Arc;

use crate::error::{EntryError, Result};
use crate::format::metadata::MessageMetadataView;

use super::api::{PayloadProcessor, Selector};
use super::kafka::KafkaProcessor;
use super::pulsar::PulsarProcessor;

/// The names of the built-in processors.
pub const BUILTINS: [&str; 2] = [KafkaProcessor::NAME, PulsarProcessor::NAME];

/// The built-in processor called `name` (one of [`BUILTINS`]).
pub fn builtin(name: &str) -> Result<Arc<dyn PayloadProcessor>> {
    Ok(match name {
        KafkaProcessor::NAME => Arc::new(KafkaProcessor::new()),
        PulsarProcessor::NAME => Arc::new(PulsarProcessor::new()),
        _ => {
            return Err(EntryError::Options(format!(
                "unknown built-in processor {name:?}; expected one of {BUILTINS:?}"
            )))
        }
    })
}

/// The entry property the built-in processor `name` selects on: `(key,
/// value)`, or `None` for every entry.
pub fn builtin_property(name: &str) -> Result<Option<(String, Option<String>)>> {
    Ok(match builtin(name)?.selector() {
        Selector::Any => None,
        Selector::Property { key, value } => Some((key.clone(), value.clone())),
    })
}

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

    /// The list a caller names (`decode(processors=...)`): at least one, else
    /// an options error.
    pub fn named(list: Vec<Arc<dyn PayloadProcessor>>) -> Result<Self> {
        if list.is_empty() {
            return Err(EntryError::Options(
                "processors must name at least one processor (the default is [KAFKA, PULSAR])"
                    .into(),
            ));
        }
        Ok(Processors(list))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_named_list_has_at_least_one_processor() {
        let Err(err) = Processors::named(vec![]) else {
            panic!("an empty list was taken");
        };
        assert_eq!(err.kind(), ErrorKind::Options);
        assert!(err.to_string().contains("at least one processor"), "{err}");
        let one = Processors::named(vec![builtin(PulsarProcessor::NAME).unwrap()]).unwrap();
        assert_eq!(one.names(), [PulsarProcessor::NAME]);
        let property = Some(("entry.format".to_string(), Some("kafka".to_string())));
        assert!(matches!(
            Selector::of_property(property),
            Selector::Property { .. }
        ));
        assert!(matches!(Selector::of_property(None), Selector::Any));
    }

    #[test]
    fn builtins_are_found_by_name_and_an_unknown_name_is_an_options_error() {
        for name in BUILTINS {
            assert_eq!(builtin(name).unwrap().name(), name);
        }
        let e = builtin("avro").err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Options);
        let text = r#"invalid option: unknown built-in processor "avro"; expected one of ["kafka", "pulsar"]"#;
        assert_eq!(e.to_string(), text);
        let kafka = Some(("entry.format".to_string(), Some("kafka".to_string())));
        assert_eq!(builtin_property("kafka").unwrap(), kafka);
        assert_eq!(builtin_property("pulsar").unwrap(), None);
        assert_eq!(
            builtin_property("avro").unwrap_err().kind(),
            ErrorKind::Options
        );
    }
}
