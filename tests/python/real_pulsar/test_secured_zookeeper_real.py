"""The metadata store route against a secured ZooKeeper: Apache ZooKeeper (from the same Maven jars as the
standalone) serving only its TLS port with client certificates required, holding a copy of the ZooKeeper
standalone's metadata whose every node's ACL needs digest authentication. The layout comes through it; the
entries from the standalone's bookie, as before, and equal what Java Readers received.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries.auth import ZooKeeperAccess

from .conftest import NS, build_classpath
from .real_pulsar_compare import assert_same_messages, delivered
from .test_secured_admin_real import TlsZooKeeper, certificates, client_certificate
from support.cli import run_cli
from support.secrets import assert_no_secret, pem_lines

pytestmark = pytest.mark.real_pulsar

USER, PASSWORD = "reader", "zk-s3cret-pw"
TOPIC = "java-mixed"


#: Lines of the private keys the module makes (filled by the fixture).
KEY_LINES: list[str] = []


@pytest.fixture(autouse=True)
def no_secret_in_any_output(capfd: Any, caplog: Any) -> Iterator[list[str]]:
    """Each test's output, log records and the texts it hands over hold no password or key."""
    texts: list[str] = []
    yield texts
    assert_no_secret([PASSWORD, *KEY_LINES], capfd, caplog, texts)


def _copy(src: Any, dst: Any, path: str, acl: list[Any]) -> int:
    """``path`` and everything below it, from ``src`` to ``dst`` (kazoo clients), each node with ``acl``."""
    copied = 0
    for child in sorted(src.get_children(path)):
        full = f"{path.rstrip('/')}/{child}"
        if full == "/zookeeper":
            continue
        data, _ = src.get(full)
        dst.create(full, data or b"", acl=acl)
        copied += 1 + _copy(src, dst, full, acl)
    return copied


@pytest.fixture(scope="module")
def secure_zk(real_pulsar_zk: Any, tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl

    work = tmp_path_factory.mktemp("secure-zk")
    certs = certificates(work)
    cert, key = client_certificate(work)
    KEY_LINES[:] = [*pem_lines(key), *pem_lines(certs["key"])]
    # SASL DIGEST-MD5: the server's users (user_<name>="<password>").
    jaas = (
        f'Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_{USER}="{PASSWORD}";\n}};\n'
    )
    lib, _, _ = build_classpath()
    zk = TlsZooKeeper(work, lib, certs, jaas=jaas).start()
    port = zk.port
    pw = work / "zk-password"
    pw.write_text(PASSWORD + "\n")
    access = ZooKeeperAccess(
        ca_file=str(certs["ca"]),
        cert_file=str(cert),
        key_file=str(key),
        digest_user=USER,
        digest_password_file=str(pw),
    )
    src = KazooClient(hosts=f"127.0.0.1:{real_pulsar_zk.standalone.zookeeper_port}", read_only=True)
    dst = None
    try:
        dst = zk.client(**access.kazoo_args())
        src.start(timeout=30)
        acl = [make_digest_acl(USER, PASSWORD, all=True)]
        copied = _copy(src, dst, "/", acl)
        assert copied > 20
        from kazoo.security import ACL, Id, Permissions

        dst.create("/sasl-only", b"sasl data", acl=[ACL(Permissions.ALL, Id("sasl", USER))])
        yield {"rp": real_pulsar_zk, "url": f"zk:127.0.0.1:{port}", "access": access, "work": work, "pw": pw}
    finally:
        for c in (src, dst):
            if c is not None:
                c.stop()
                c.close()
        zk.stop()


def test_the_layout_through_tls_and_digest_auth_equals_the_java_reader(secure_zk: dict[str, Any]) -> None:
    entries = pe.read_topic(NS + TOPIC, metadata_url=secure_zk["url"], metadata_access=secure_zk["access"])
    assert_same_messages(secure_zk["rp"].truth[TOPIC]["messages"], delivered(entries))


def test_without_credentials_or_tls_one_line_that_says_why(
    secure_zk: dict[str, Any], no_secret_in_any_output: list[str]
) -> None:
    a = secure_zk["access"]
    no_digest = ZooKeeperAccess(ca_file=a.ca_file, cert_file=a.cert_file, key_file=a.key_file)
    with pytest.raises(PermissionError, match="not readable without credentials") as e:
        pe.read_topic(NS + TOPIC, metadata_url=secure_zk["url"], metadata_access=no_digest)
    texts = [str(e.value)]
    with pytest.raises(OSError, match="so it may take TLS only: give its CA") as e2:
        pe.read_topic(NS + TOPIC, metadata_url=secure_zk["url"], timeout=3)
    texts.append(str(e2.value))
    for t in texts:
        assert "\n" not in t
    no_secret_in_any_output += [*texts, repr(a)]


def test_the_cli_reads_through_secured_zookeeper(
    secure_zk: dict[str, Any], tmp_path: Path, monkeypatch: Any, no_secret_in_any_output: list[str]
) -> None:
    a = secure_zk["access"]
    monkeypatch.setenv("PULSAR_ENTRIES_ZK_PASSWORD", PASSWORD)
    out = tmp_path / "m.parquet"
    run = run_cli(
        "decode",
        NS + TOPIC,
        str(out),
        "--metadata-url",
        secure_zk["url"],
        "--zk-ca-file",
        str(a.ca_file),
        "--zk-cert-file",
        str(a.cert_file),
        "--zk-key-file",
        str(a.key_file),
        "--zk-digest-user",
        USER,
    )
    import pyarrow.parquet as pq

    rows = pe.reassemble_chunks(pq.read_table(out).replace_schema_metadata(None))
    assert_same_messages(secure_zk["rp"].truth[TOPIC]["messages"], delivered_rows(rows))
    no_secret_in_any_output += [run.stdout, run.stderr]


def delivered_rows(rows: Any) -> list[dict[str, Any]]:
    return [r for r in rows.to_pylist() if r["txn_status"] != "aborted" and not r["compacted_out"]]


def test_sasl_digest_md5_reads_a_node_only_sasl_may_read(secure_zk: dict[str, Any]) -> None:
    from pulsar_entries._cluster.stores import ZooKeeperStore

    a = secure_zk["access"]
    hosts = secure_zk["url"].removeprefix("zk:")
    sasl = ZooKeeperAccess(
        ca_file=a.ca_file,
        cert_file=a.cert_file,
        key_file=a.key_file,
        sasl_user=USER,
        sasl_password_file=str(secure_zk["pw"]),
    )
    store = ZooKeeperStore(hosts, timeout=20, access=sasl)
    try:
        assert store.get("/sasl-only") == b"sasl data"
    finally:
        store.close()
    tls_only = ZooKeeperAccess(ca_file=a.ca_file, cert_file=a.cert_file, key_file=a.key_file)
    store = ZooKeeperStore(hosts, timeout=20, access=tls_only)
    try:
        with pytest.raises(PermissionError, match="/sasl-only: not readable without credentials"):
            store.get("/sasl-only")
    finally:
        store.close()
