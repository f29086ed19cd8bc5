"""``decode``: entries into messages. The processor list is checked here
(:func:`pulsar_entries.processors.native_processors`); the work is the Rust core's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from . import _native
from ._crypto import CryptoKeysLike
from ._crypto import crypto_keys as to_crypto_keys
from .processors import native_processors


def decode(
    entries: Any,
    *,
    verify_checksum: bool | None = None,
    keep_markers: bool | None = None,
    max_uncompressed_size: int | None = None,
    processors: Sequence[Any] | None = None,
    utf8_errors: str | None = None,
    max_output_bytes: int | None = None,
    columns: Sequence[str] | None = None,
    crypto_keys: CryptoKeysLike | None = None,
) -> pa.Table:
    """Decodes entries into one row per message.

    ``entries`` is a pyarrow Table or RecordBatch, or any object exporting an
    Arrow stream (``__arrow_c_stream__``), with columns ``ledger_id`` (int64),
    ``entry_id`` (int64), ``data`` (binary or large_binary) and optionally
    ``partition`` (int32). An entry that cannot be decoded yields exactly one
    row whose ``error`` says what failed and at which byte offset.

    ``processors`` (default ``[KAFKA, PULSAR]``) are tried in order per entry;
    see ``pulsar_entries.processors``.

    ``utf8_errors``: a text field (producer name, key, property, uuid,
    replicated_from, ...) that is not valid UTF-8 is ``"replace"``d, each
    malformed sequence by U+FFFD as Pulsar's Java client reads it (default),
    or makes the entry one ``"error"`` row naming the field and offset.
    ``max_output_bytes`` caps the decompressed payload bytes of this call;
    an entry that would exceed it is an error row.
    ``columns`` builds only those output columns, in that order (the same
    values as the full table's columns, without the work for the others);
    an unknown or repeated name raises OptionsError.

    ``crypto_keys`` decrypts end-to-end encrypted messages as Pulsar's Java
    consumer does: a mapping from key name (as the producer's
    ``addEncryptionKey`` named it; ``"*"`` for any name) to the private key
    (PEM bytes, PEM text or a file path), or a :class:`CryptoKeys`. RSA keys
    (PKCS#1, PKCS#8) and EC keys (SEC1, PKCS#8; P-256, P-384, P-521, secp256k1) are supported. An entry that
    cannot be decrypted (no key for any of its names, a wrong key, an altered
    payload) stays one row of its stored bytes, ``encrypted`` true and
    ``error`` saying why, as ``ConsumerCryptoFailureAction.CONSUME`` delivers
    it; it never fails the call. Without keys, encrypted entries are such
    rows with no error.

    An option left ``None`` takes the core's default (see ``DecodeOptions``: checksums verified, markers
    dropped, payloads up to ``DEFAULT_MAX_UNCOMPRESSED_SIZE``, UTF-8 replaced, no output budget).
    """
    options = _native.DecodeOptions(
        verify_checksum=verify_checksum,
        keep_markers=keep_markers,
        max_uncompressed_size=max_uncompressed_size,
        utf8_errors=utf8_errors,
        max_output_bytes=max_output_bytes,
    )
    return decode_with(entries, options, processors=processors, columns=columns, crypto_keys=crypto_keys)


def decode_with(
    entries: Any,
    options: _native.DecodeOptions | None = None,
    *,
    processors: Sequence[Any] | None = None,
    columns: Sequence[str] | None = None,
    crypto_keys: CryptoKeysLike | None = None,
) -> pa.Table:
    """:func:`decode` with its options as one object (``None``: the defaults)."""
    columns = None if columns is None else list(columns)
    return _native.decode(
        entries,
        processors=native_processors(processors),
        options=options,
        columns=columns,
        crypto_keys=to_crypto_keys(crypto_keys),
    )
