"""Deprecated alias of ``pulsar_entries._sample``: import from pulsar_entries._sample (internal: the CLI's sample topic).
This alias module goes away in the next release."""

import warnings

from ._sample import CODECS, MARKER_COMMIT, SampleTopic, generate_topic

warnings.warn(
    "pulsar_entries.sample is deprecated: the sample-topic generator is internal now (pulsar_entries._sample, no stable API)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "CODECS",
    "MARKER_COMMIT",
    "SampleTopic",
    "generate_topic",
]
