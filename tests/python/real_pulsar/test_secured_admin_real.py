"""A secured Apache Pulsar 4.2.4 standalone, its certificates made by the test:

- its bookie serves only TLS clients whose certificate carries the role ``pulsar`` (``tlsClientAuthentication``
  and ``BookieAuthZFactory``), and its broker talks TLS to it (``bookkeeperTLSClientAuthentication``);
- broker and bookie keep their metadata in an Apache ZooKeeper serving only TLS, with client certificates;
- the broker requires token authentication, on https too; a local OAuth2 issuer (127.0.0.1) hands out
  client-credentials tokens it accepts, each valid for a few seconds, so a read refreshes one.

By every metadata route (ZooKeeper, the admin REST API), in process, through the CLI and on Spark, the
entries come from the bookie over TLS and equal what a Java Reader received. No test's output, log, error,
``repr`` or Spark plan holds a token, client secret or key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries._servers import free_port
from pulsar_entries._standalone import Standalone
from pulsar_entries.auth import AdminTls, BookieTls, OAuth2, Token, ZooKeeperAccess

from .conftest import NS, _java, build_classpath
from .real_pulsar_compare import assert_same_messages, delivered
from support.cli import run_cli
from support.docblocks import page_blocks, run_block
from support.oauth2_issuer import Issuer
from support.secrets import assert_no_secret, pem_lines
from support.streams import available_now

pytestmark = pytest.mark.real_pulsar

TOPIC = NS + "secured-orders"
CLIENT_ID, CLIENT_SECRET, AUDIENCE = "pulsar-entries-test", "cl1ent-s3cret-value", "urn:pulsar:test"
#: Seconds an issued token is valid: short, so that one read outlives a token.
LIFETIME = 4


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key: bytes, subject: str, lifetime: float | None = None) -> str:
    """An HS256 JWT, as Pulsar's AuthenticationProviderToken checks them (``tokenSecretKey``)."""
    claims: dict[str, Any] = {"sub": subject}
    if lifetime is not None:
        claims["exp"] = int(time.time() + lifetime)
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + _b64(json.dumps(claims).encode())
    return head + "." + _b64(hmac.new(key, head.encode(), hashlib.sha256).digest())


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)


def certificates(d: Path) -> dict[str, Path]:
    """A CA, and the broker's certificate for 127.0.0.1 signed by it (PEM; PKCS#8 key)."""
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(d / "ca.key"))
    openssl(
        "req",
        "-x509",
        "-new",
        "-key",
        str(d / "ca.key"),
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-out",
        str(d / "ca.pem"),
    )
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(d / "broker.key"))
    openssl("req", "-new", "-key", str(d / "broker.key"), "-subj", "/CN=127.0.0.1", "-out", str(d / "broker.csr"))
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(
        "x509", "-req", "-in", str(d / "broker.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", str(d / "san.ext"), "-out", str(d / "broker.pem"),
    )  # fmt: skip
    return {"ca": d / "ca.pem", "cert": d / "broker.pem", "key": d / "broker.key"}


def broker_issuer(key: bytes) -> Issuer:
    """An OAuth2 issuer whose tokens the broker accepts (signed with its key), each valid for :data:`LIFETIME`
    seconds, given only to the test's client credentials and audience."""

    def grant(form: dict[str, str], n: int) -> tuple[int, dict[str, Any]]:
        ok = (
            form.get("grant_type") == "client_credentials"
            and form.get("client_id") == CLIENT_ID
            and form.get("client_secret") == CLIENT_SECRET
            and form.get("audience") == AUDIENCE
        )
        if not ok:
            return 401, {"error": "invalid_client", "error_description": "bad client credentials"}
        return 200, {"access_token": jwt(key, "admin", LIFETIME), "token_type": "Bearer", "expires_in": LIFETIME}

    return Issuer(grant)


def client_certificate(d: Path, name: str = "client", subject: str = "/CN=pulsar-entries") -> tuple[Path, Path]:
    """A client certificate ``<name>.pem`` and its key, signed by the CA :func:`certificates` made in ``d``.
    A bookie that authorizes by role (``BookieAuthZFactory``) reads it from the subject: ``OU=0:<role>``."""
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(d / f"{name}.key"))
    openssl("req", "-new", "-key", str(d / f"{name}.key"), "-subj", subject, "-out", str(d / f"{name}.csr"))
    # With extensions, an X.509 v3 certificate (rustls, like most TLS stacks now, refuses v1).
    (d / f"{name}.ext").write_text("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    openssl(
        "x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"),
    )  # fmt: skip
    return d / f"{name}.pem", d / f"{name}.key"


class TlsZooKeeper:
    """Apache ZooKeeper (``ZooKeeperServerMain`` from the standalone's jars) serving only a TLS port on
    127.0.0.1 that requires client certificates of the test's CA; with ``jaas``, SASL DIGEST-MD5 users
    too. Stopped by its PID."""

    def __init__(self, work: Path, lib: Path, certs: dict[str, Path], *, jaas: str | None = None) -> None:
        self.work, self.lib, self.certs, self.jaas = work / "zookeeper", lib, certs, jaas
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> TlsZooKeeper:
        w = self.work
        (w / "data").mkdir(parents=True)
        # ZooKeeper's PEM key store: the key and its certificate in one file.
        (w / "server-store.pem").write_text(self.certs["key"].read_text() + self.certs["cert"].read_text())
        lines = [
            "tickTime=2000",
            f"dataDir={w / 'data'}",
            f"secureClientPort={self.port}",
            "secureClientPortAddress=127.0.0.1",
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            f"ssl.keyStore.location={w / 'server-store.pem'}",
            "ssl.keyStore.type=PEM",
            f"ssl.trustStore.location={self.certs['ca']}",
            "ssl.trustStore.type=PEM",
            "ssl.clientAuth=need",
            "admin.enableServer=false",
        ]
        jvm = []
        if self.jaas is not None:
            lines.append("authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
            (w / "jaas.conf").write_text(self.jaas)
            jvm.append(f"-Djava.security.auth.login.config={w / 'jaas.conf'}")
        (w / "zoo.cfg").write_text("\n".join(lines) + "\n")
        (w / "hosts").write_text("127.0.0.1 localhost\n")
        with open(w / "zk.log", "wb") as log:
            self.proc = subprocess.Popen(
                [
                    "java", "-Xmx256m", f"-Djdk.net.hosts.file={w / 'hosts'}", "-Dzookeeper.admin.enableServer=false",
                    *jvm, "-cp", f"{self.lib}/*", "org.apache.zookeeper.server.ZooKeeperServerMain", str(w / "zoo.cfg"),
                ],
                stdout=log,
                stderr=log,
                start_new_session=True,
            )  # fmt: skip
        return self

    def log_tail(self) -> str:
        return (self.work / "zk.log").read_text(errors="replace")[-3000:]

    def client(self, **kazoo_args: Any) -> Any:
        """A started ``KazooClient``, once the server gives a TLS client a session (within 60 s)."""
        from kazoo.client import KazooClient

        deadline = time.monotonic() + 60
        while True:
            assert self.proc is not None and self.proc.poll() is None, self.log_tail()
            c = KazooClient(hosts=f"127.0.0.1:{self.port}", **kazoo_args)
            try:
                c.start(timeout=5)
                return c
            except Exception:
                c.close()
                assert time.monotonic() < deadline, self.log_tail()
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    """The secured standalone: its bookie serves only TLS clients with a certificate of role ``pulsar``
    (``tlsClientAuthentication`` and ``BookieAuthZFactory``), its broker talks TLS to it
    (``bookkeeperTLSClientAuthentication``), broker and bookie keep their metadata in a ZooKeeper serving
    only TLS with client certificates, and the broker requires tokens, on https too."""
    work = tmp_path_factory.mktemp("secured")
    key = os.urandom(32)
    admin = jwt(key, "admin")
    certs = certificates(work)
    broker_cert, broker_key = client_certificate(work, "broker-client", "/CN=broker/OU=0:pulsar")
    reader_cert, reader_key = client_certificate(work, "reader", "/CN=pulsar-entries/OU=0:pulsar")
    stranger_cert, stranger_key = client_certificate(work, "stranger", "/CN=stranger/OU=0:other")
    lib, _, _ = build_classpath()
    zk = TlsZooKeeper(work, lib, certs).start()
    (work / "broker-zk-store.pem").write_text(broker_key.read_text() + broker_cert.read_text())
    tls_port = free_port()
    sa = Standalone(
        lib,
        work / "pulsar",
        metadata="rocksdb",
        admin_token=admin,
        metadata_url=f"zk:127.0.0.1:{zk.port}",
        # The broker's and the bookie's ZooKeeper client, over TLS (as Pulsar's docs set it up).
        jvm_options=(
            "-Dzookeeper.client.secure=true",
            "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
            f"-Dzookeeper.ssl.keyStore.location={work / 'broker-zk-store.pem'}",
            "-Dzookeeper.ssl.keyStore.type=PEM",
            f"-Dzookeeper.ssl.trustStore.location={certs['ca']}",
            "-Dzookeeper.ssl.trustStore.type=PEM",
        ),
        config={
            "authenticationEnabled": "true",
            "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
            "tokenSecretKey": "data:;base64," + base64.b64encode(key).decode(),
            "authorizationEnabled": "true",
            "superUserRoles": "admin",
            "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "brokerClientAuthenticationParameters": f"token:{admin}",
            "webServicePortTls": tls_port,
            "tlsCertificateFilePath": certs["cert"],
            "tlsKeyFilePath": certs["key"],
            "tlsTrustCertsFilePath": certs["ca"],
            "transactionCoordinatorEnabled": "false",
            # The bookie (it reads this file too): TLS only, client certificates of role "pulsar".
            "tlsProviderFactoryClass": "org.apache.bookkeeper.tls.TLSContextFactory",
            "tlsClientAuthentication": "true",
            "tlsKeyStoreType": "PEM",
            "tlsKeyStore": certs["key"],
            "tlsCertificatePath": certs["cert"],
            "tlsTrustStoreType": "PEM",
            "tlsTrustStore": certs["ca"],
            "bookieAuthProviderFactoryClass": "org.apache.bookkeeper.tls.BookieAuthZFactory",
            "authorizedRoles": "pulsar",
            # The broker's BookKeeper client: TLS with its certificate.
            "bookkeeperTLSClientAuthentication": "true",
            "bookkeeperTLSKeyFileType": "PEM",
            "bookkeeperTLSTrustCertTypes": "PEM",
            "bookkeeperTLSKeyFilePath": broker_key,
            "bookkeeperTLSCertificateFilePath": broker_cert,
            "bookkeeperTLSTrustCertsFilePath": certs["ca"],
        },
    )
    issuer = None
    try:
        sa.start()
        issuer = broker_issuer(key)
        import pulsar

        client = pulsar.Client(sa.service_url, authentication=pulsar.AuthenticationToken(admin))
        try:
            producer = client.create_producer(TOPIC, batching_enabled=True, batching_max_messages=7)
            for i in range(60):
                producer.send_async(f"order-{i}".encode(), None, partition_key=f"k{i % 5}")
            producer.flush()
            producer.close()
            # Two messages over maxMessageSize, sent in chunks.
            producer = client.create_producer(TOPIC, batching_enabled=False, chunking_enabled=True)
            for i in range(2):
                producer.send(bytes([65 + i]) * 150_000, partition_key=f"big{i}")
            producer.close()
            reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
            truth = []
            while reader.has_message_available():
                m = reader.read_next(timeout_millis=20_000)
                truth.append((m.partition_key(), m.data()))
            reader.close()
        finally:
            client.close()
        _java(
            ["corpus", "truth", sa.service_url, sa.web_url, str(work / "truth.json"), TOPIC.removeprefix(NS)],
            work / "java.log",
            hosts=sa.hosts_path,
            token=admin,
        )
        java = json.loads((work / "truth.json").read_text())[TOPIC.removeprefix(NS)]["messages"]
        zk_url = f"zk:127.0.0.1:{zk.port}"
        zk_access = ZooKeeperAccess(ca_file=str(certs["ca"]), cert_file=str(reader_cert), key_file=str(reader_key))
        bookie_tls = BookieTls(str(certs["ca"]), str(reader_cert), str(reader_key))
        # A reader never reads past the last-add-confirmed. Pipelined adds carry an old one; the
        # bookie learns the last from the broker's explicit LAC (every 100 ms here): wait for it.
        deadline = time.monotonic() + 30
        while len(
            messages(pe.read_topic(TOPIC, metadata_url=zk_url, metadata_access=zk_access, bookie_tls=bookie_tls))
        ) < len(truth):
            assert time.monotonic() < deadline, "the bookie's last-add-confirmed never reached the last entry"
            time.sleep(0.2)
        creds = work / "credentials.json"
        creds.write_text(
            json.dumps({"type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
        )
        yield {
            "sa": sa,
            "issuer": issuer,
            "https": f"https://127.0.0.1:{tls_port}",
            "ca": str(certs["ca"]),
            "creds": creds,
            "admin": admin,
            "truth": truth,
            "java": java,
            "work": work,
            "zk_url": zk_url,
            "zk_access": zk_access,
            "bookie_tls": bookie_tls,
            "reader": (str(reader_cert), str(reader_key)),
            "stranger": (str(stranger_cert), str(stranger_key)),
            # What must never show in any text the tests capture.
            "secrets": [
                admin,
                CLIENT_SECRET,
                *(line for p in (reader_key, stranger_key, broker_key, certs["key"]) for line in pem_lines(p)),
            ],
        }
    finally:
        if issuer is not None:
            issuer.close()
        sa.stop()
        zk.stop()


@pytest.fixture(autouse=True)
def no_secret_in_any_output(secured: dict[str, Any], capfd: Any, caplog: Any) -> Iterator[list[str]]:
    """Every test here: what it printed (both file descriptors, subprocesses included), every log record,
    and the texts it hands over (errors, reprs, CLI output, Spark plans) hold no secret of the fixture's."""
    texts: list[str] = []
    yield texts
    assert_no_secret(secured["secrets"], capfd, caplog, texts)


def messages(entries: Any) -> list[tuple[str, bytes]]:
    assert entries.filter(pc.is_valid(entries["error"])).num_rows == 0
    rows = pe.reassemble_chunks(pe.decode(entries.drop_columns(["error"]))).to_pylist()
    assert all(r["error"] is None for r in rows)
    return [(r["key"], r["value"]) for r in rows]


def test_oauth2_reads_the_layout_over_https_and_refreshes_its_token(secured: dict[str, Any]) -> None:
    issuer = secured["issuer"]
    auth = OAuth2(issuer.url, secured["creds"], audience=AUDIENCE)
    tls = AdminTls(secured["ca"])
    bk = secured["bookie_tls"]
    got = messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=auth, admin_tls=tls, bookie_tls=bk))
    assert got == secured["truth"] and len(got) == 62
    assert auth.fetches == 1
    # The token expires; the next read fetches a new one (and the broker accepts it).
    time.sleep(LIFETIME + 0.5)
    got = messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=auth, admin_tls=tls, bookie_tls=bk))
    assert got == secured["truth"] and auth.fetches == 2
    assert [g["audience"] for g in issuer.forms[-2:]] == [AUDIENCE, AUDIENCE]
    # A token method and the same https settings, for comparison.
    token = Token(secured["admin"])
    assert (
        messages(pe.read_topic(TOPIC, admin_url=secured["https"], admin_auth=token, admin_tls=tls, bookie_tls=bk))
        == got
    )
    assert secured["admin"] not in repr(token) and CLIENT_SECRET not in repr(auth)


def test_refusals_are_one_line_and_show_no_secret(
    secured: dict[str, Any], tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    tls = AdminTls(secured["ca"])
    texts = no_secret_in_any_output
    with pytest.raises(PermissionError) as e:  # no credentials at all
        pe.read_topic(TOPIC, admin_url=secured["https"], admin_tls=tls)
    texts.append(str(e.value))
    assert "HTTP 401" in texts[-1]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"client_id": CLIENT_ID, "client_secret": "not-the-s3cret-value"}))
    with pytest.raises(PermissionError) as e:
        pe.read_topic(
            TOPIC,
            admin_url=secured["https"],
            admin_auth=OAuth2(secured["issuer"].url, wrong, audience=AUDIENCE),
            admin_tls=tls,
        )
    texts.append(str(e.value))
    assert "refused the client credentials" in texts[-1]
    with pytest.raises(OSError) as e:  # the system's CAs do not know this broker's certificate
        pe.read_topic(TOPIC, admin_url=secured["https"], admin_token=secured["admin"])
    texts.append(str(e.value))
    assert "CERTIFICATE_VERIFY_FAILED" in texts[-1] or "certificate verify failed" in texts[-1]
    for t in texts:
        assert "\n" not in t
        for secret in (secured["admin"], CLIENT_SECRET, "not-the-s3cret-value"):
            assert secret not in t, t


def test_the_cli_takes_pulsar_auth_plugin_names(
    secured: dict[str, Any], tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    params = json.dumps(
        {
            "type": "client_credentials",
            "issuerUrl": secured["issuer"].url,
            "privateKey": f"file://{secured['creds']}",
            "audience": AUDIENCE,
        }
    )
    out = tmp_path / "m.parquet"
    run = run_cli(
        "decode",
        TOPIC,
        str(out),
        "--metadata-url",
        secured["https"],
        "--auth-plugin",
        "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
        "--auth-params",
        params,
        "--tls-trust-certs-file",
        secured["ca"],
        *bookie_tls_options(secured),
    )
    import pyarrow.parquet as pq

    table = pe.reassemble_chunks(pq.read_table(out).replace_schema_metadata(None))
    assert [(r["key"], r["value"]) for r in table.to_pylist()] == secured["truth"]
    # A secret on the command line is refused, before any request.
    inline = run_cli(
        "decode",
        TOPIC,
        str(tmp_path / "x.parquet"),
        "--metadata-url",
        secured["https"],
        "--auth-plugin",
        "token",
        "--auth-params",
        f"token:{secured['admin']}",
        ok=False,
    )
    assert "holds a secret on the command line" in inline.stderr
    no_secret_in_any_output += [run.stdout, run.stderr, inline.stdout, inline.stderr]


def zookeeper_options(secured: dict[str, Any]) -> list[str]:
    """The CLI's options for the standalone's ZooKeeper: TLS with the reader's certificate."""
    c, k = secured["reader"]
    return ["--zk-ca-file", secured["ca"], "--zk-cert-file", c, "--zk-key-file", k]


def bookie_tls_options(secured: dict[str, Any], cert: tuple[str, str] | None = None) -> list[str]:
    c, k = cert or secured["reader"]
    return [
        "--bookkeeper-tls-trust-certs-file",
        secured["ca"],
        "--bookkeeper-tls-certificate-file",
        c,
        "--bookkeeper-tls-key-file",
        k,
    ]


def test_every_route_over_tls_equals_the_java_reader(
    secured: dict[str, Any], tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    java, bk, zk = secured["java"], secured["bookie_tls"], secured["zk_access"]
    assert len(java) == 62
    by_zk = pe.read_topic(TOPIC, metadata_url=secured["zk_url"], metadata_access=zk, bookie_tls=bk)
    assert_same_messages(java, delivered(by_zk))
    by_admin = pe.read_topic(
        TOPIC,
        admin_url=secured["https"],
        admin_auth=Token(secured["admin"]),
        admin_tls=AdminTls(secured["ca"]),
        bookie_tls=bk,
    )
    assert_same_messages(java, delivered(by_admin))
    # The bookie's certificate names 127.0.0.1, the address it registers: hostname verification passes.
    checked = BookieTls(bk.trust_certs_file, bk.certificate_file, bk.key_file, hostname_verification=True)
    by_zk = pe.read_topic(TOPIC, metadata_url=secured["zk_url"], metadata_access=zk, bookie_tls=checked)
    assert_same_messages(java, delivered(by_zk))
    # The CLI, by the ZooKeeper route.
    out = tmp_path / "m.parquet"
    run = run_cli(
        "decode",
        TOPIC,
        str(out),
        "--metadata-url",
        secured["zk_url"],
        *zookeeper_options(secured),
        *bookie_tls_options(secured),
    )
    import pyarrow.parquet as pq

    rows = pe.reassemble_chunks(pq.read_table(out).replace_schema_metadata(None)).to_pylist()
    assert_same_messages(java, [r for r in rows if r["txn_status"] != "aborted"])
    no_secret_in_any_output += [run.stdout, run.stderr, repr(bk), repr(zk)]


def test_the_tls_only_bookie_refuses_in_one_line_that_says_why(
    secured: dict[str, Any], tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    texts = no_secret_in_any_output
    where = dict(metadata_url=secured["zk_url"], metadata_access=secured["zk_access"], timeout=10)
    other = tmp_path / "other"
    other.mkdir()
    other_ca = certificates(other)["ca"]
    cases = [
        (None, "TLS is required"),
        (BookieTls(secured["ca"]), "client certificate"),
        (BookieTls(secured["ca"], *secured["stranger"]), "did not authorize this client certificate"),
        (BookieTls(str(other_ca), *secured["reader"]), "certificate is not trusted"),
    ]
    for tls, says in cases:
        try:
            entries = pe.read_topic(TOPIC, bookie_tls=tls, **where)
        except OSError as e:
            errors = [str(e)]
        else:
            errors = entries.filter(pc.is_valid(entries["error"]))["error"].to_pylist()
            assert entries.num_rows == errors.__len__() > 0, "every entry is an error row"
        assert all(says in t for t in errors), (says, errors[:2])
        assert all("\n" not in t for t in errors)
        texts += errors
    # The CLI says it once, on one line (the entries are error rows, as for any bookie that cannot serve them).
    run = run_cli(
        "decode", TOPIC, str(tmp_path / "x.parquet"), "--metadata-url", secured["zk_url"], *zookeeper_options(secured)
    )
    (line,) = [x for x in run.stderr.splitlines() if "could not be read" in x]
    assert "TLS is required: the bookie refused a plaintext client" in line
    texts += [run.stdout, run.stderr]


def test_export_over_tls_keeps_the_topic_as_a_table(
    secured: dict[str, Any], tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    from deltalake import DeltaTable

    from pulsar_entries.export import export_topic

    java = secured["java"]
    stats = export_topic(
        TOPIC,
        f"delta:{tmp_path / 't'}",
        metadata_url=secured["zk_url"],
        metadata_access=secured["zk_access"],
        bookie_tls=secured["bookie_tls"],
    )
    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table()
    assert stats.rows == table.num_rows == len(java) and stats.dead_letters == 0
    got = sorted((r["ledger_id"], r["entry_id"], r["batch_index"], r["value"]) for r in table.to_pylist())
    want = sorted((m["ledger_id"], m["entry_id"], m["batch_index"], base64.b64decode(m["value"])) for m in java)
    assert got == want


@pytest.mark.spark
def test_spark_reads_over_tls_with_pulsar_option_names(
    secured: dict[str, Any], spark: Any, tmp_path: Path, no_secret_in_any_output: list[str]
) -> None:
    from pulsar_entries.spark import register

    register(spark)
    c, k = secured["reader"]

    def source(kind: Any) -> Any:
        return (
            kind.format("pulsar")
            .option("metadataUrl", secured["zk_url"])
            .option("zkCaFile", secured["ca"])
            .option("zkCertFile", c)
            .option("zkKeyFile", k)
            .option("bookkeeperTLSTrustCertsFilePath", secured["ca"])
            .option("bookkeeperTLSCertificateFilePath", c)
            .option("bookkeeperTLSKeyFilePath", k)
            .option("topic", TOPIC)
        )

    keys = [(n, "ascending") for n in ("ledger_id", "entry_id", "batch_index")]
    df = source(spark.read).load()
    assert_same_messages(secured["java"], df.toArrow().sort_by(keys).to_pylist())
    no_secret_in_any_output.append(df._jdf.queryExecution().toString())
    # The streaming source, exactly once from storage, over the same TLS.
    import pyarrow.parquet as pq

    available_now(
        source(spark.readStream).load(),
        tmp_path,
    )
    assert_same_messages(secured["java"], pq.read_table(tmp_path / "sink").sort_by(keys).to_pylist())


def test_the_security_page_runs_against_the_secured_standalone(
    secured: dict[str, Any], no_secret_in_any_output: list[str]
) -> None:
    """docs/security.md's examples, as written, against this module's secured standalone: the files and addresses
    they take from the environment are the fixture's. They print how many entries each read saw."""
    work = secured["work"]
    (work / "admin.jwt").write_text(secured["admin"])
    env = {
        **os.environ,
        "PULSAR_TLS_DIR": str(work),
        "PULSAR_METADATA_URL": secured["zk_url"],
        "PULSAR_ADMIN_URL": secured["https"],
        "PULSAR_OAUTH2_ISSUER": secured["issuer"].url,
    }
    found = page_blocks("docs/security.md")
    assert [lang for _, lang, _ in found] == ["python", "python"], found
    entries = pe.read_topic(
        TOPIC, metadata_url=secured["zk_url"], metadata_access=secured["zk_access"], bookie_tls=secured["bookie_tls"]
    ).num_rows
    zk_route, admin_route = (run_block(*block, cwd=work, env=env) for block in found)
    no_secret_in_any_output += [*zk_route, *admin_route]
    assert zk_route[0].split() == [str(entries), "entries,", str(entries), "read"], zk_route
    assert admin_route[0].split() == [str(entries), "entries,", str(entries), "again"], admin_route
    assert entries > 0
