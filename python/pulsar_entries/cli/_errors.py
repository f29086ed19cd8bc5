"""The CLI's error: one line for the user, with the root cause.

A failure inside Spark reaches the driver as a Java or Python exception whose
text is a stack trace (of the JVM, of the Python worker, often both);
:func:`one_line` digs out the exception that started it and adds a hint when
the cause is one with a known remedy (a module missing on the workers)."""

from __future__ import annotations

import re


class CliError(Exception):
    """A user-facing error: printed as one line."""


_TRACEBACK = "Traceback (most recent call last):"
#: ``module.Class: message`` as a Python traceback's last line has it.
_EXCEPTION_LINE = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(?P<msg>.*)$")
#: A Java exception line of a JVM stack trace.
_JAVA_LINE = re.compile(r"^(?:Caused by: )?(?P<cls>(?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception)): (?P<msg>.*)$")


def _python_root(text: str) -> tuple[str, str] | None:
    """The (class, message) a Python traceback in ``text`` ends with."""
    if _TRACEBACK not in text:
        return None
    tail = text.rsplit(_TRACEBACK, 1)[1]
    for line in tail.splitlines():
        if not line.strip() or line.startswith((" ", "\t")):
            continue
        m = _EXCEPTION_LINE.match(line.strip())
        if m:
            return m.group("cls"), m.group("msg").strip()
        return "", line.strip()
    return None


def _java_root(text: str) -> tuple[str, str] | None:
    """The deepest ``Caused by:`` of a JVM stack trace in ``text``."""
    found = None
    for line in text.splitlines():
        m = _JAVA_LINE.match(line.strip().lstrip(": "))
        if m:
            found = (m.group("cls"), m.group("msg").strip())
    return found


def _is_spark_error(e: BaseException) -> bool:
    module = type(e).__module__ or ""
    return module.startswith(("pyspark", "py4j"))


def root_cause(e: BaseException) -> str:
    """The message of the exception that started ``e``, on one line."""
    text = str(e)
    if _is_spark_error(e):
        found = _python_root(text) or _java_root(text)
        if found is not None:
            cls, msg = found
            short = cls.rsplit(".", 1)[-1]
            if short == "ModuleNotFoundError" or short == "ImportError":
                module = re.search(r"No module named '([^']+)'", msg)
                name = module.group(1) if module else msg
                return (
                    f"the Python on the Spark workers cannot import {name} ({msg}): install pulsar-entries "
                    "(pip install pulsar-entries) in the workers' Python, or ship it with the job "
                    "(README: Shipping to a cluster)"
                )
            return msg or short
    cause: BaseException | None = e
    while cause is not None and not str(cause).strip():
        cause = cause.__cause__ or cause.__context__
    return str(cause if cause is not None else e).strip()


def one_line(e: BaseException) -> str:
    """What to print for ``e``: its root cause, first line only."""
    message = root_cause(e)
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__
