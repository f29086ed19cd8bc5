#!/usr/bin/env python3
"""Self-check of the interop harness (stdlib only).

Feeds every entry produced by `run.sh generate` back through `run.sh parse` and requires
an identical report, then checks that damaged entries are reported, not fatal:
a flipped payload byte must give checksum_valid=false, a truncated entry an "error".

    python3 tests/interop/java/selfcheck.py
"""

import json
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parent / "run.sh"


def harness(cmd, stdin=None):
    proc = subprocess.run(["bash", str(RUN), cmd], input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"run.sh {cmd} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def main():
    cases = harness("generate")
    parsed = harness("parse", json.dumps([c["entry"] for c in cases]))
    assert len(parsed) == len(cases), (len(parsed), len(cases))
    for case, got in zip(cases, parsed):
        want = {k: v for k, v in case.items() if k != "name"}
        assert got == want, f"{case['name']}: parse differs from generate"

    # Damage: flip the last byte of a checksummed entry; cut another short.
    victim = next(c for c in cases if c["has_checksum"] and c["messages"] and c["broker_entry_metadata"] is None)
    raw = bytearray.fromhex(victim["entry"])
    raw[-1] ^= 0xFF
    flipped, truncated, junk = harness("parse", json.dumps([raw.hex(), victim["entry"][:20], "zz"]))
    assert flipped.get("checksum_valid") is False, flipped
    assert "error" in truncated and truncated["entry"] == victim["entry"][:20], truncated
    assert "error" in junk, junk

    print(f"ok: {len(cases)} generated cases round-trip through parse; damaged entries are reported")


if __name__ == "__main__":
    main()
