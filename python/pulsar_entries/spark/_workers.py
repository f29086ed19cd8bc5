"""Which Python a local Spark session's workers start.

PySpark starts its Python workers with ``PYSPARK_PYTHON``, or ``python3`` from ``PATH`` when that is
unset. A script run as ``.venv/bin/python job.py`` without the venv activated then has workers in
another interpreter, one without pulsar_entries (or pyarrow), and every job fails with a
``ModuleNotFoundError`` deep in a Py4J trace. On a local master the workers run on this machine, so
they can run this interpreter: :func:`use_this_python` points the session there, before a Python
function (a data source, ``mapInArrow``, a column function) is handed to Spark. A choice the user
made (``PYSPARK_PYTHON``, ``spark.pyspark.python``) and every non-local master are left alone.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def use_this_python(spark: Any = None) -> bool:
    """Makes the workers of ``spark``'s local session (the active one by default) run this
    interpreter when they would otherwise start another by default; True when it did."""
    try:
        from pyspark import SparkContext

        sc = spark.sparkContext if spark is not None else SparkContext._active_spark_context
    except Exception:  # Spark Connect (no SparkContext), or no pyspark: nothing to settle here
        return False
    if sc is None or not str(sc.master).startswith("local"):
        return False
    if os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python"):
        return False  # the user's choice
    current = str(sc.pythonExec)
    found = shutil.which(current) or current
    if _same_file(found, sys.executable):
        return False
    sc.pythonExec = sys.executable
    return True
