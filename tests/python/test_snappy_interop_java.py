"""SNAPPY payloads byte for byte against Apache Pulsar 4.2.4's CompressionCodecSnappy.

Pulsar compresses SNAPPY with airlift aircompressor's SnappyRawCompressor; our
encoder (rust/core/src/snappy.rs) follows the same algorithm, so an entry we
write carries exactly the payload a Java producer writes. The harness's
`compress` command runs Pulsar's codec (direct- and heap-buffer paths, which
must agree) over the same inputs: random sizes up to 300 KB (several 64 KiB
blocks), every size around the encoder's thresholds, and data that is random,
repetitive, JSON-like, text-like or a mix.

A missing Java or Maven is a failure, never a skip.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

import pulsar_entries as pe

from support.java_harness import run_harness

pytestmark = pytest.mark.interop

LOREM = (
    b"Lorem ipsum dolor sit amet, consectetur adipiscing elit. Cras id massa odio. Duis commodo "
    b"ligula sed efficitur cursus. Aliquam sollicitudin, tellus quis suscipit tincidunt, erat sem "
)


def make(kind: str, size: int, rng: random.Random) -> bytes:
    if kind == "random":
        return rng.randbytes(size)
    if kind == "zeros":
        return bytes(size)
    if kind == "alphabet":
        letters = rng.randbytes(rng.randint(1, 4))
        return bytes(rng.choice(letters) for _ in range(size))
    if kind == "text":
        start = rng.randrange(len(LOREM))
        return (LOREM * (size // len(LOREM) + 2))[start : start + size]
    if kind == "json":
        out = bytearray()
        while len(out) < size:
            record = {
                "id": rng.randrange(10**9),
                "user": f"user-{rng.randrange(5000)}",
                "ts": 1_700_000_000_000 + rng.randrange(10**8),
                "tags": rng.sample(["a", "bb", "ccc", "dddd", "eeeee"], rng.randint(0, 3)),
                "score": round(rng.random() * 100, 3),
            }
            out += json.dumps(record).encode() + b"\n"
        return bytes(out[:size])
    # "mixed": noise with back-references of random distance and length.
    out = bytearray(rng.randbytes(min(size, 64)))
    while len(out) < size:
        if rng.random() < 0.5:
            out += rng.randbytes(rng.randint(1, 40))
        else:
            back = rng.randint(1, min(len(out), 70_000))
            n = rng.randint(4, 300)
            start = len(out) - back
            out += bytes(out[start + i % back] for i in range(n))
    return bytes(out[:size])


KINDS = ["random", "zeros", "alphabet", "text", "json", "mixed"]


def corpus() -> list[bytes]:
    rng = random.Random(20240603)
    inputs = [make(k, n, rng) for k in KINDS for n in [*list(range(0, 40)), 59, 60, 61, 62, 255, 256, 257]]
    block = 1 << 16
    for n in (block - 16, block - 15, block - 1, block, block + 1, block + 15, block + 16, 2 * block + 17):
        inputs += [make(k, n, rng) for k in ("random", "text", "mixed", "zeros")]
    for _ in range(70):
        inputs.append(make(rng.choice(KINDS), rng.randint(0, 300_000), rng))
    return inputs


def ours(data: bytes) -> bytes:
    """The SNAPPY payload of a single (non-batched) message we encode."""
    entry = pe.encode_entry([{"value": data}], batch=False, compression="snappy", publish_time=1)
    parsed = pe.parse_entry(entry)
    assert parsed["metadata"]["compression"] == "snappy"
    return parsed["payload"]


def test_snappy_payloads_equal_pulsars_codec():
    inputs = corpus()
    assert len(inputs) > 300 and sum(map(len, inputs)) > 5_000_000
    java = run_harness(
        "compress",
        json.dumps({"codec": "snappy", "inputs": [base64.b64encode(d).decode() for d in inputs]}),
    )
    assert len(java) == len(inputs)
    mismatches = []
    for i, (data, j) in enumerate(zip(inputs, java)):
        assert "error" not in j, (i, len(data), j["error"])
        expected = base64.b64decode(j["compressed"])
        got = ours(data)
        if got != expected:
            at = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
            mismatches.append((i, len(data), len(got), len(expected), f"first difference at byte {at}"))
    assert not mismatches, f"{len(mismatches)}/{len(inputs)} differ: {mismatches[:10]}"


def test_pulsars_snappy_test_vector():
    """Spec §12.1: Pulsar's CompressorCodecTest SNAPPY vector, from our encoder and from the harness."""
    text = (
        b"Lorem ipsum dolor sit amet, consectetur adipiscing elit. Cras id massa odio. Duis commodo ligula sed "
        b"efficitur cursus. Aliquam sollicitudin, tellus quis suscipit tincidunt, erat sem efficitur nulla, in "
        b"feugiat diam ex a dolor. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia "
        b"Curae; Vestibulum ac volutpat nisl, vel aliquam elit. Maecenas auctor aliquet turpis, id ullamcorper "
        b"metus. Ut tincidunt et magna non ultrices. Quisque lacinia metus sed egestas tincidunt. Sed congue "
        b"lacinia maximus."
    )
    vector = bytes.fromhex(
        "8c04f0b44c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363"
        "696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073"
        "656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c75732071"
        "7569732073757363697069742074696e636964756e742c20657261742073656d1d516c6e756c6c612c20696e20666575676961"
        "74206469616d20657820612005d0442e20566573746962756c756d20616e74652009ed147072696d69730539d8617563696275"
        "73206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b202e58"
        "00586320766f6c7574706174206e69736c2c2076656c20616c09e52931384d616563656e617320617563746f72091e24657420"
        "7475727069732c214c01cc286d636f72706572206d6574212900553d010195206d61676e61206e6f6e159f402e205175697371"
        "7565206c6163696e6961093b002025791c67657374617320743144102e2053656421d900672e3000186178696d75732e"
    )
    assert len(text) == 524 and len(vector) == 456
    java = run_harness("compress", json.dumps({"codec": "snappy", "inputs": [base64.b64encode(text).decode()]}))
    assert base64.b64decode(java[0]["compressed"]) == vector
    assert ours(text) == vector
