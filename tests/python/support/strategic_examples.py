"""Strategies for the Spark strategic-compaction tests, in a module of their
own so that Spark executors can receive them (pickled by value)."""

from __future__ import annotations


class MergeTail:
    """Merges accepted values as ``prev[-24:] + b"+" + cur`` (bytes format);
    rejects a value whose length is a multiple of 7 over an existing one, and
    refuses a deletion when the kept value's length is a multiple of 5."""

    def should_keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        if prev is None:
            return False
        if cur is None:
            return len(prev) % 5 == 0
        return len(cur) % 7 == 0

    def is_merge_enabled(self) -> bool:
        return True

    def merge(self, prev: bytes, cur: bytes) -> bytes:
        return prev[-24:] + b"+" + cur


class ShortestWins:
    """No merge: keeps the shorter of two values; tombstones always delete."""

    def should_keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        return prev is not None and cur is not None and len(prev) <= len(cur)


class Exploding:
    """Fails on the first conflict, to check that a strategy's error stops the run."""

    def should_keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        if prev is not None:
            raise ValueError("strategy exploded on purpose")
        return False


class MergeKeepsCurrent:
    """Accepts every value and merges it as itself: the latest value wins, but every kept value is a
    merged one (typed again from its bytes), so a merging export must equal a latest-wins one."""

    def should_keep_left(self, prev: bytes | None, cur: bytes | None) -> bool:
        return False

    def is_merge_enabled(self) -> bool:
        return True

    def merge(self, prev: bytes, cur: bytes) -> bytes:
        return bytes(cur)
