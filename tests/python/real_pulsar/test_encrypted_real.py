"""End-to-end encrypted topics against a real Apache Pulsar 4.2.4: Java producers encrypt with an
RSA pair (every codec, batched, single and chunked; each data key wrapped for two key names), and
``decode(crypto_keys=...)`` of the stored entries equals what a Java Reader holding the same private
key receives. With a wrong or missing key every message is one row that says why, and no key
material appears in any error or repr.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pulsar_entries as pe

from .conftest import NS, _java
from .real_pulsar_compare import assert_same_messages
from support.cli import run_cli
from support.docblocks import page_blocks, run_block
from support.secrets import assert_no_secret, pem_lines
from support.streams import available_now

pytestmark = pytest.mark.real_pulsar

NAME = "java-encrypted-codecs"
TOPIC = NS + NAME
PEMS = ("corpus-rsa.pem", "corpus-rsa.pub.pem")
#: The private keys the tests use: no line of them may appear in any output (see support/secrets.py).
PRIVATE_KEYS: list[Path] = []


@pytest.fixture(autouse=True)
def no_key_in_any_output(capfd: Any, caplog: Any) -> Iterator[list[str]]:
    texts: list[str] = []
    yield texts
    lines = [line for p in PRIVATE_KEYS if p.exists() for line in pem_lines(p)]
    assert_no_secret(lines, capfd, caplog, texts)


@pytest.fixture(scope="module")
def encrypted(real_pulsar_zk: Any, tmp_path_factory: Any) -> dict[str, Any]:
    """The topic's stored entries, the Java Reader's messages, and the private key's path."""
    rp = real_pulsar_zk
    sa = rp.standalone
    work = tmp_path_factory.mktemp("encrypted")
    for name in PEMS:  # the corpus's RSA pair: Corpus encrypted and truth find it beside their output
        shutil.copy(rp.workdir / name, work / name)
    log = work / "java.log"
    _java(
        ["corpus", "encrypted", sa.service_url, sa.web_url, str(work / "produced.json"), TOPIC],
        log,
        hosts=sa.hosts_path,
    )
    _java(["corpus", "truth", sa.service_url, sa.web_url, str(work / "truth.json"), NAME], log, hosts=sa.hosts_path)
    truth = json.loads((work / "truth.json").read_text())[NAME]
    zk = f"zk:127.0.0.1:{sa.zookeeper_port}"
    entries = pe.read_topic(TOPIC, metadata_url=zk)
    assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    PRIVATE_KEYS.append(work / "corpus-rsa.pem")
    return {
        "entries": entries.drop_columns(["error"]),
        "truth": truth,
        "key": work / "corpus-rsa.pem",
        "work": work,
        "zk": zk,
    }


def _other_key(work: Path) -> Path:
    """A second RSA private key (PKCS#8), which unwraps nothing of this topic."""
    path = work / "other.pem"
    if not path.exists():
        subprocess.run(
            ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(path)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    PRIVATE_KEYS.append(path)
    return path


def test_decrypted_messages_equal_the_java_reader(encrypted: dict[str, Any]) -> None:
    entries, truth = encrypted["entries"], encrypted["truth"]
    java = truth["messages"]
    # 5 codecs x (batched + single) x 8 messages, and 2 chunked messages.
    assert len(java) == 82
    names = {m["producer_name"] for m in java}
    assert "enc-chunked" in names and "enc-zstd-batched" in names and "enc-snappy-single" in names
    # The message lists its key names in order (enc-key, other-key); with a key for the second only,
    # the reader must look past the first.
    decoded = pe.decode(entries, crypto_keys={"other-key": encrypted["key"]})
    assert decoded.filter(pc.is_valid(decoded["error"])).num_rows == 0, decoded["error"].drop_null().to_pylist()[:3]
    assert not any(decoded["encrypted"].to_pylist())
    rows = pe.reassemble_chunks(decoded).to_pylist()
    assert all(r["error"] is None for r in rows)
    assert_same_messages(java, rows)
    # Batches arrive as their messages, as the decrypting Java Reader has them.
    assert any(r["batch_index"] is not None and r["batch_index"] > 0 for r in rows)
    # The same through the "*" name, PEM bytes and a CryptoKeys object.
    keys = pe.CryptoKeys({"*": encrypted["key"].read_bytes()})
    assert repr(keys) == "CryptoKeys(names=['*'])"
    again = pe.reassemble_chunks(pe.decode(entries, crypto_keys=keys)).to_pylist()
    assert_same_messages(java, again)


def test_without_the_key_each_entry_is_one_row_that_says_why(encrypted: dict[str, Any]) -> None:
    entries = encrypted["entries"]
    n = entries.num_rows
    for keys, why in (
        ({"some-other-name": encrypted["key"]}, '"enc-key": no private key given; "other-key": no private key given'),
        ({"*": _other_key(encrypted["work"])}, "did not unwrap the data key"),
    ):
        decoded = pe.decode(entries, crypto_keys=keys)
        # One row per entry, stored bytes kept, encrypted, and the reason: nothing lost, nothing fails.
        assert decoded.num_rows == n
        assert decoded["encrypted"].to_pylist() == [True] * n
        assert decoded["value"].to_pylist() == [None if v is None else v for v in _payloads(entries)]
        errors = decoded["error"].to_pylist()
        assert all(e is not None and e.startswith("cannot decrypt: ") and why in e for e in errors), errors[:2]
    # No keys at all: the rows of old, encrypted and without an error.
    plain = pe.decode(entries)
    assert plain["encrypted"].to_pylist() == [True] * n and plain["error"].null_count == n


def _payloads(entries: Any) -> list[bytes]:
    return [pe.parse_entry(d)["payload"] for d in entries["data"].to_pylist()]


def test_bad_keys_are_one_line_errors_that_show_no_key(encrypted: dict[str, Any], tmp_path: Path) -> None:
    secret = encrypted["key"].read_text()
    body = "".join(secret.splitlines()[1:3])
    public = tmp_path / "public.pem"
    shutil.copy(encrypted["key"].parent / "corpus-rsa.pub.pem", public)
    broken = secret.replace(body[:40], body[:40][::-1])
    cases = [
        ({"k": public}, "is not a private key"),
        ({"k": broken}, "not a valid PKCS#1 RSA key"),
        ({"k": tmp_path / "missing.pem"}, "cannot read"),
        ({"k": b"not pem"}, "no PEM block found"),
    ]
    for keys, text in cases:
        with pytest.raises(pe.OptionsError) as e:
            pe.decode(encrypted["entries"], crypto_keys=keys)
        message = str(e.value)
        assert (text in message and "'k'" in message) or '"k"' in message, message
        assert "\n" not in message and body[:20] not in message and body[40:60] not in message, message
    keys = pe.CryptoKeys({"enc-key": encrypted["key"].read_bytes()})
    assert body[:20] not in repr(keys) and keys.names == ["enc-key"]


def _zk(encrypted: dict[str, Any]) -> str:
    return encrypted["zk"]


def test_read_topic_typed_and_the_cli_decrypt_with_the_key(encrypted: dict[str, Any], tmp_path: Path) -> None:
    java, key = encrypted["truth"]["messages"], encrypted["key"]
    # read_topic's messages (typed: BYTES, the schema the producers used, which registers none), decrypted
    # on the way.
    bytes_schema = {"type": "BYTES", "schema": b"", "properties": {}}
    typed = pe.read_topic(TOPIC, metadata_url=_zk(encrypted), schema=bytes_schema, crypto_keys={"enc-key": key})
    assert_same_messages(java, typed.to_pylist())
    # The CLI, in a subprocess: --crypto-key NAME=PEM_FILE.
    out = tmp_path / "decoded.parquet"
    run_cli("decode", TOPIC, str(out), "--metadata-url", _zk(encrypted), f"--crypto-key=enc-key={key}")
    rows = pe.reassemble_chunks(pq.read_table(out).replace_schema_metadata(None))
    assert_same_messages(java, rows.to_pylist())
    # A key file that is not a key: one line naming the key, nothing of the file's contents.
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END RSA PRIVATE KEY-----\n")
    run = run_cli(
        "decode",
        TOPIC,
        str(tmp_path / "x.parquet"),
        "--metadata-url",
        _zk(encrypted),
        f"--crypto-key=k={bad}",
        ok=False,
    )
    assert "--crypto-key" in run.stderr and ("'k'" in run.stderr or '"k"' in run.stderr), run.stderr
    assert "c2VjcmV0" not in run.stderr + run.stdout and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_export_decrypts_into_the_table(encrypted: dict[str, Any], tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from pulsar_entries.export import export_topic

    java = encrypted["truth"]["messages"]
    stats = export_topic(
        TOPIC, f"delta:{tmp_path / 't'}", metadata_url=_zk(encrypted), crypto_keys={"*": encrypted["key"]}
    )
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table()
    assert stats.rows == table.num_rows == len(java)
    got = sorted((r["ledger_id"], r["entry_id"], r["batch_index"], r["value"]) for r in table.to_pylist())
    want = sorted((m["ledger_id"], m["entry_id"], m["batch_index"], base64.b64decode(m["value"])) for m in java)
    assert got == want
    # Nothing went to the dead letters: the table beside it is made only for its first row.
    assert stats.dead_letters == 0 and not (tmp_path / "t_dead_letters").exists()


def _sorted_rows(table: Any) -> list[dict[str, Any]]:
    keys = [(c, "ascending") for c in ("partition", "ledger_id", "entry_id", "batch_index")]
    return table.sort_by(keys).to_pylist()


@pytest.mark.spark
def test_spark_batch_and_stream_sources_decrypt_with_key_files(
    encrypted: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    from pulsar_entries.spark import register

    register(spark)
    java, key = encrypted["truth"]["messages"], encrypted["key"]
    secret = "".join(key.read_text().splitlines()[1:3])

    def reader(kind: Any) -> Any:
        return (
            kind.format("pulsar")
            .option("metadataUrl", _zk(encrypted))
            .option("topic", TOPIC)
            .option("cryptoKeyFiles", f"enc-key={key}")
        )

    df = reader(spark.read).load()
    assert_same_messages(java, _sorted_rows(df.toArrow()))
    # The plan names the key file, never what is in it.
    plan = df._jdf.queryExecution().toString()
    assert secret[:24] not in plan and secret[-24:] not in plan
    available_now(
        reader(spark.readStream).load(),
        tmp_path,
    )
    assert_same_messages(java, _sorted_rows(pq.read_table(tmp_path / "sink")))
    # The Spark decode of a DataFrame of entries, keys by file.
    from pulsar_entries import spark as pes

    decoded = pes.decode(spark.createDataFrame(encrypted["entries"]), crypto_key_files={"enc-key": str(key)})
    rows = pe.reassemble_chunks(decoded.toArrow())
    assert_same_messages(java, _sorted_rows(rows))
    # A bad key file is one error on the driver, before any task.
    bad = tmp_path / "public.pem"
    shutil.copy(key.parent / "corpus-rsa.pub.pem", bad)
    with pytest.raises(Exception, match="is not a private key"):
        reader = spark.read.format("pulsar").option("metadataUrl", _zk(encrypted)).option("topic", TOPIC)
        reader.option("cryptoKeyFiles", str(bad)).load()


def _ec_keys(work: Path, how: str) -> Path:
    """An EC pair made as Pulsar's docs make them, in a directory of its own under the corpus's key file names
    (``Corpus encrypted`` and ``truth`` find a pair there, whatever its algorithm)."""
    d = work / f"ec-{how}"
    d.mkdir(exist_ok=True)
    key, pub = d / "corpus-rsa.pem", d / "corpus-rsa.pub.pem"
    if how == "secp521r1-explicit":  # Pulsar's documented command, EC PARAMETERS block included
        run = ["openssl", "ecparam", "-name", "secp521r1", "-genkey", "-param_enc", "explicit", "-out", str(key)]
    else:
        run = ["openssl", "ecparam", "-name", how, "-genkey", "-noout", "-out", str(key)]
    subprocess.run(run, check=True, capture_output=True, timeout=120)
    subprocess.run(
        ["openssl", "ec", "-in", str(key), "-pubout", "-out", str(pub)], check=True, capture_output=True, timeout=120
    )
    if how == "secp384r1":  # the same key as PKCS#8
        subprocess.run(
            ["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", str(key), "-out", str(d / "p8.pem")],
            check=True,
            capture_output=True,
            timeout=120,
        )
        key.write_bytes((d / "p8.pem").read_bytes())
    PRIVATE_KEYS.append(key)
    return d


@pytest.mark.parametrize("how", ["prime256v1", "secp384r1", "secp521r1-explicit"])
def test_ec_keys_decrypt_as_the_java_reader(real_pulsar_zk: Any, tmp_path: Path, how: str) -> None:
    """Java producers wrap each data key with BouncyCastle's ECIES for an EC public key; decode unwraps it
    with the private key (P-256 SEC1, P-384 PKCS#8, P-521 with explicit parameters as Pulsar's docs make it)."""
    sa = real_pulsar_zk.standalone
    d = _ec_keys(tmp_path, how)
    name = f"java-encrypted-ec-{how}"
    log = tmp_path / "java.log"
    _java(
        ["corpus", "encrypted", sa.service_url, sa.web_url, str(d / "produced.json"), NS + name],
        log,
        hosts=sa.hosts_path,
    )
    _java(["corpus", "truth", sa.service_url, sa.web_url, str(d / "truth.json"), name], log, hosts=sa.hosts_path)
    java = json.loads((d / "truth.json").read_text())[name]["messages"]
    assert len(java) == 82
    entries = pe.read_topic(NS + name, metadata_url=f"zk:127.0.0.1:{sa.zookeeper_port}").drop_columns(["error"])
    decoded = pe.decode(entries, crypto_keys={"enc-key": d / "corpus-rsa.pem"})
    assert decoded["error"].null_count == decoded.num_rows, decoded["error"].drop_null().to_pylist()[:2]
    assert_same_messages(java, pe.reassemble_chunks(decoded).to_pylist())
    # Another EC key of the same curve unwraps nothing: every entry says so.
    other = _ec_keys(tmp_path / "other", how) if (tmp_path / "other").mkdir() is None else None
    assert other is not None
    wrong = pe.decode(entries, crypto_keys={"*": other / "corpus-rsa.pem"})
    assert all("the EC key did not unwrap the data key" in e for e in wrong["error"].to_pylist())


def test_the_encryption_page_runs_against_the_encrypted_topic(
    encrypted: dict[str, Any], tmp_path: Path, no_key_in_any_output: list[str]
) -> None:
    """docs/encryption.md's example, as written, against this module's topic (Java's producers wrote it encrypted);
    its key file and ZooKeeper come from the environment. Every row decrypts, and the typed read has the Java
    Reader's messages."""
    env = {**os.environ, "PULSAR_CRYPTO_KEY": str(encrypted["key"]), "PULSAR_METADATA_URL": encrypted["zk"]}
    ((where, language, code),) = page_blocks("docs/encryption.md")
    out, err = run_block(where, language, code, tmp_path, env)
    no_key_in_any_output += [out, err]
    rows = pe.decode(encrypted["entries"], crypto_keys={"enc-key": encrypted["key"]}).num_rows
    java = len(encrypted["truth"]["messages"])
    assert out.splitlines() == [
        f"by name: {rows} of {rows} rows decrypted",
        f"any name: {rows} of {rows} rows decrypted",
        f"typed: {java} messages",
    ], out
