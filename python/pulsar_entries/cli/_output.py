"""Where the CLI writes: every command's output goes through :func:`staged`.

The rules, the same on both engines:

- ``OUT`` may not equal or overlap an input (``IN`` inside ``OUT`` or ``OUT``
  inside ``IN``): writing would destroy or mix what is being read.
- An existing non-empty ``OUT`` is replaced only with ``--overwrite``, and only
  when pulsar-entries wrote it: a directory the tool writes holds a
  :data:`MARKER` file, a Parquet file it writes carries the key
  :data:`FILE_MARK` in its key-value metadata (:func:`marked`), an HTML report
  the :data:`HTML_MARK` generator tag. A directory or file without its mark is
  never deleted (an empty file is: nothing is lost).
- The output is written to a hidden temporary sibling (``.NAME.tmp-PID``) and
  moved into place when the command has finished: a file with an atomic
  rename (``os.replace``), a directory by renaming the old one aside, renaming
  the new one in and then deleting the old one. An interrupt or an error
  leaves the previous output as it was (or no output), never a partial one
  that reads as complete; the temporary sibling is removed.

Test hook (for the interrupt tests only, not a user feature): when the
environment variable ``PULSAR_ENTRIES_TEST_COMMIT_DELAY`` holds a number of
seconds, the CLI prints ``pulsar-entries: test hook: ...`` to stderr and sleeps
that long after writing the temporary sibling and before moving it into
place, so a test can interrupt a write deterministically.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._redact import filesystem_from_uri
from ._errors import CliError

#: The file every output directory of the CLI holds: what ``--overwrite`` may replace.
MARKER = "_PULSAR_ENTRIES"
#: The key-value metadata key of every Parquet file the CLI writes: what ``--overwrite`` may replace.
FILE_MARK = b"pulsar-entries"
#: The generator tag of every HTML report the CLI writes, in its first bytes.
HTML_MARK = '<meta name="generator" content="pulsar-entries">'
#: Test-only: seconds to sleep between writing the temporary sibling and moving it into place.
COMMIT_DELAY_ENV = "PULSAR_ENTRIES_TEST_COMMIT_DELAY"


def marked(table: pa.Table) -> pa.Table:
    """``table`` with :data:`FILE_MARK` in its schema metadata (Parquet's key-value metadata once
    written): the mark that lets ``--overwrite`` replace the file later."""
    note = b"written by pulsar-entries; --overwrite may replace this file"
    return table.replace_schema_metadata({**(table.schema.metadata or {}), FILE_MARK: note})


def _is_ours(fs: pafs.FileSystem, path: str) -> bool:
    """Whether the file at ``path`` carries the mark of an output of pulsar-entries (or is empty)."""
    try:
        with fs.open_input_file(path) as f:
            size = f.size()
            if size == 0:
                return True
            head = f.read(4096)
            if head.startswith(b"PAR1") and size >= 12:
                f.seek(size - 4)
                if f.read(4) != b"PAR1":
                    return False
                f.seek(0)
                return FILE_MARK in (pq.read_metadata(f).metadata or {})
            return HTML_MARK.encode() in head
    except (OSError, ValueError, pa.ArrowException):
        return False


def _fs(path: str) -> tuple[pafs.FileSystem, str]:
    if "://" in path and not path.startswith("file://"):
        fs, inner = filesystem_from_uri(path, "output")
        return fs, inner
    local = path[len("file://") :] if path.startswith("file://") else path
    return pafs.LocalFileSystem(), str(Path(local).absolute())


def _norm(path: str | Path) -> str:
    """A comparable form of a path: absolute and resolved locally, the URI otherwise."""
    text = str(path)
    if "://" in text and not text.startswith("file://"):
        return text.rstrip("/")
    local = text[len("file://") :] if text.startswith("file://") else text
    return str(Path(local).resolve())


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def check_overlap(out: str | Path, inputs: Sequence[str | Path]) -> None:
    """Refuses an ``out`` that equals an input, lies inside one or contains one."""
    target = _norm(out)
    for source in inputs:
        src = _norm(source)
        if _within(target, src) or _within(src, target):
            raise CliError(
                f"output {out} overlaps input {source}: writing it would destroy or mix the input; "
                "choose an OUT outside IN"
            )


def _info(fs: pafs.FileSystem, path: str) -> pafs.FileInfo:
    return fs.get_file_info(path)


def _is_empty_dir(fs: pafs.FileSystem, path: str) -> bool:
    return not fs.get_file_info(pafs.FileSelector(path, recursive=False))


def check_replace(out: str | Path, *, directory: bool, overwrite: bool) -> None:
    """Refuses to replace an existing ``out`` without ``--overwrite``, and a
    directory pulsar-entries did not write even with it."""
    fs, path = _fs(str(out))
    info = _info(fs, path)
    if info.type == pafs.FileType.NotFound:
        return
    if info.type == pafs.FileType.Directory:
        if _is_empty_dir(fs, path):
            return
        if not directory:
            raise CliError(f"output {out} is a directory; this command writes a file there")
        if _info(fs, f"{path}/{MARKER}").type != pafs.FileType.File:
            raise CliError(
                f"output {out} is a non-empty directory that pulsar-entries did not write; "
                "it is left alone: choose another OUT or empty it yourself"
            )
        if not overwrite:
            raise CliError(f"output {out} exists: add --overwrite to replace it")
        return
    if directory:
        raise CliError(f"output {out} is a file; this command writes a directory there")
    if not overwrite:
        raise CliError(f"output {out} exists: add --overwrite to replace it")
    if not _is_ours(fs, path):
        raise CliError(
            f"output {out} is a file that pulsar-entries did not write; --overwrite replaces only its own "
            "outputs: remove it yourself or choose another OUT"
        )


def _temp_sibling(fs: pafs.FileSystem, path: str, what: str) -> str:
    parent, _, name = path.rstrip("/").rpartition("/")
    return f"{parent}/.{name}.{what}-{os.getpid()}"


def _remove(fs: pafs.FileSystem, path: str) -> None:
    info = _info(fs, path)
    if info.type == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif info.type == pafs.FileType.File:
        fs.delete_file(path)


def _pause_for_tests() -> None:
    delay = os.environ.get(COMMIT_DELAY_ENV)
    if delay:
        print(f"pulsar-entries: test hook: pausing {delay}s before the rename", file=sys.stderr, flush=True)
        time.sleep(float(delay))


def _commit(fs: pafs.FileSystem, tmp: str, path: str, directory: bool) -> None:
    if not directory:
        fs.move(tmp, path)  # rename(2): replaces the old file atomically
        return
    old = _info(fs, path)
    if old.type == pafs.FileType.NotFound:
        fs.move(tmp, path)
        return
    aside = _temp_sibling(fs, path, "old")
    fs.move(path, aside)
    try:
        fs.move(tmp, path)
    except BaseException:
        fs.move(aside, path)
        raise
    fs.delete_dir(aside)


@contextmanager
def staged(out: str | Path, *, inputs: Sequence[str | Path] = (), directory: bool, overwrite: bool) -> Iterator[str]:
    """Checks ``out`` (see the module's rules) and yields the temporary sibling
    to write instead; moves it into place when the block finishes, removes it
    when the block raises (an interrupt included).

    ``directory``: the output is a directory (it gets the :data:`MARKER`); else a file.
    The temporary sibling does not exist yet: the writer creates it."""
    check_overlap(out, inputs)
    check_replace(out, directory=directory, overwrite=overwrite)
    fs, path = _fs(str(out))
    parent = path.rstrip("/").rpartition("/")[0]
    if parent:
        fs.create_dir(parent, recursive=True)
    tmp = _temp_sibling(fs, path, "tmp")
    _remove(fs, tmp)  # left by a process that was killed outright
    local = isinstance(fs, pafs.LocalFileSystem)
    shown = tmp if local or "://" not in str(out) else f"{str(out).split('://', 1)[0]}://{tmp}"
    try:
        yield shown
        if directory:
            fs.create_dir(tmp, recursive=True)
            with fs.open_output_stream(f"{tmp}/{MARKER}") as f:
                f.write(b"written by pulsar-entries; --overwrite may replace this directory\n")
        _pause_for_tests()
        _commit(fs, tmp, path, directory)
    except BaseException:
        with suppress(OSError):
            _remove(fs, tmp)
        raise
