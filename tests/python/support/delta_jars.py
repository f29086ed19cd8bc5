"""Delta Lake's Spark jars for the tests of the Spark export, resolved by Maven (as the real-Pulsar
harness's are) into ``tests/.delta-jars``: Spark's own ``spark.jars.packages`` resolution (Ivy) fails
here on a local Maven cache that holds a pom without its jar."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pulsar_entries.export._tables import DELTA_PACKAGE

DIR = Path(__file__).resolve().parents[2] / ".delta-jars"


def delta_jars() -> list[str]:
    """The paths of ``delta-spark`` and ``delta-storage`` at :data:`DELTA_PACKAGE`'s version."""
    group, spark_artifact, version = DELTA_PACKAGE.split(":")
    wanted = [(spark_artifact, version), ("delta-storage", version)]
    jars = [DIR / f"{a}-{v}.jar" for a, v in wanted]
    for (artifact, v), jar in zip(wanted, jars):
        if not jar.exists():
            subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "dependency:copy",
                    f"-Dartifact={group}:{artifact}:{v}",
                    f"-DoutputDirectory={DIR}",
                ],
                check=True,
                timeout=600,
            )
    return [str(j) for j in jars]
