"""TLS to bookies (issue 28): the client asks for TLS as BookKeeper's does (v3 START_TLS, then a handshake on the
same socket) and reads inside it. Against a fake bookie on 127.0.0.1 served by Python's own TLS (OpenSSL), with a
CA and certificates the test makes; the real bookie is in real_pulsar/test_secured_admin_real.py."""

from __future__ import annotations

import pickle
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import pulsar_entries as pe
from pulsar_entries.auth import BookieTls, bookie_client_options

from support.admin_server import FakeAdmin
from support.cli import run_cli
from support.fake_bookie import FakeBookie, metadata_text, topic_routes

TOPIC = "persistent://public/default/t"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=120)


def _issue(d: Path, name: str, subject: str, ext: str) -> tuple[Path, Path]:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(d / f"{name}.key"))
    _openssl("req", "-new", "-key", str(d / f"{name}.key"), "-subj", subject, "-out", str(d / f"{name}.csr"))
    (d / f"{name}.ext").write_text(ext)
    _openssl(
        "x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"),
    )  # fmt: skip
    return d / f"{name}.pem", d / f"{name}.key"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: Any) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other-ca"):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(d / f"{ca}.key"))
        _openssl("req", "-x509", "-new", "-key", str(d / f"{ca}.key"), "-days", "2", "-subj", f"/CN={ca}",
                 "-out", str(d / f"{ca}.pem"))  # fmt: skip
    server, server_key = _issue(d, "bookie", "/CN=bookie", "subjectAltName=IP:127.0.0.1\n")
    client, client_key = _issue(d, "client", "/CN=reader/OU=0:pulsar", "extendedKeyUsage=clientAuth\n")
    return {
        "ca": d / "ca.pem",
        "other_ca": d / "other-ca.pem",
        "server": server,
        "server_key": server_key,
        "client": client,
        "client_key": client_key,
    }


def server_context(pki: dict[str, Path], *, require_client: bool) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki["server"], pki["server_key"])
    if require_client:
        ctx.load_verify_locations(pki["ca"])
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def entries(ledger: int, entry: int) -> bytes | None:
    return f"entry-{ledger}-{entry}".encode() if entry < 10 else None


def read(bk: FakeBookie, tls: BookieTls | None, *, address: str | None = None) -> Any:
    meta = metadata_text(bk.address, state="CLOSED", last_entry_id=9, length=100)
    ledgers = [{"ledgerId": 3, "entries": 10, "size": 100, "metadata": meta}]
    with FakeAdmin(topic_routes("public/default/t", ledgers)) as admin:
        addresses = None if address is None else {bk.address: address}
        return pe.read_topic(TOPIC, admin_url=admin.url, timeout=5, bookie_tls=tls, bookie_addresses=addresses)


def errors(t: Any) -> list[str]:
    return t.filter(pc.is_valid(t["error"]))["error"].to_pylist()


def test_reads_inside_tls_with_a_client_certificate(pki: dict[str, Path]) -> None:
    tls = BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]))
    with FakeBookie(entries, tls=server_context(pki, require_client=True), tls_only=True) as bk:
        t = read(bk, tls)
        assert errors(t) == []
        assert t["data"].to_pylist() == [f"entry-3-{e}".encode() for e in range(10)]
        assert bk.start_tls >= 1
        # The certificate names 127.0.0.1, the address read: hostname verification passes too.
        checked = BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]), hostname_verification=True)
        assert errors(read(bk, checked)) == []


def test_every_refusal_is_one_line_that_says_why(pki: dict[str, Path]) -> None:
    tls = BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]))
    with FakeBookie(entries, tls=server_context(pki, require_client=True), tls_only=True) as bk:
        cases: list[tuple[BookieTls | None, str, str | None]] = [
            (None, "TLS is required: the bookie refused a plaintext client", None),
            (BookieTls(str(pki["ca"])), "client certificate", None),
            (
                BookieTls(str(pki["other_ca"]), str(pki["client"]), str(pki["client_key"])),
                "the bookie's certificate is not trusted",
                None,
            ),
            # Reached by a name its certificate does not hold: refused only when names are checked.
            (
                BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]), hostname_verification=True),
                "NotValidForName",
                "localhost:" + bk.address.split(":")[1],
            ),
        ]
        for given, says, address in cases:
            found = errors(read(bk, given, address=address))
            assert len(found) == 10 and all(says in e for e in found), (says, found[:1])
            assert all("\n" not in e for e in found)
        assert errors(read(bk, tls, address="localhost:" + bk.address.split(":")[1])) == []
    with FakeBookie(entries) as plain:  # a bookie without TLS answers START_TLS with EBADREQ
        found = errors(read(plain, tls))
        assert found and all("does not serve TLS (START_TLS answered error code 404 (EBADREQ))" in e for e in found)


def test_options_are_checked_when_built_and_show_paths_only(pki: dict[str, Path], tmp_path: Path) -> None:
    tls = BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]))
    options = bookie_client_options(5, tls)
    assert options.tls_trust_certs_file == str(pki["ca"]) and options.tls_key_file == str(pki["client_key"])
    assert options.tls_hostname_verification is False
    key_line = pki["client_key"].read_text().splitlines()[1]
    assert key_line not in repr(options) and key_line not in repr(tls)
    # Options travel to Spark tasks by pickle: the files are read again there.
    assert pickle.loads(pickle.dumps(options)) == options
    with pytest.raises(ValueError, match="give certificate_file and key_file together"):
        BookieTls(str(pki["ca"]), str(pki["client"]))
    with pytest.raises(ValueError, match="is not a readable file"):
        BookieTls(str(tmp_path / "missing.pem"))
    with pytest.raises(pe.OptionsError, match="the CA bundle holds no certificate"):
        bookie_client_options(5, BookieTls(str(pki["client_key"])))
    v1 = tmp_path / "v1.pem"  # no extensions: an X.509 version 1 certificate
    _openssl("x509", "-req", "-in", str(pki["client"].with_suffix(".csr")), "-CA", str(pki["ca"]),
             "-CAkey", str(pki["ca"].with_suffix(".key")), "-days", "1", "-out", str(v1))  # fmt: skip
    with pytest.raises(pe.OptionsError, match=r"X\.509 version 1"):
        bookie_client_options(5, BookieTls(str(pki["ca"]), str(v1), str(pki["client_key"])))


def test_the_cli_and_spark_options_name_what_is_missing(pki: dict[str, Path]) -> None:
    run = run_cli(
        "inspect", TOPIC, "--metadata-url", "zk:127.0.0.1:1", "--bookkeeper-tls-certificate-file",
        str(pki["client"]), ok=False,
    )  # fmt: skip
    assert "need --bookkeeper-tls-trust-certs-file" in run.stderr
    run = run_cli(
        "inspect", TOPIC, "--metadata-url", "zk:127.0.0.1:1", "--bookkeeper-tls-trust-certs-file",
        str(pki["client_key"]), ok=False,
    )  # fmt: skip
    assert "--bookkeeper-tls-*:" in run.stderr and "holds no certificate" in run.stderr
    from pulsar_entries.spark._topic_options import TopicOptions

    base = {"topic": TOPIC, "metadataUrl": "zk:127.0.0.1:1"}
    with pytest.raises(ValueError, match="need bookkeeperTLSTrustCertsFilePath"):
        TopicOptions.parse({**base, "bookkeeperTLSKeyFilePath": str(pki["client_key"])})
    opts = TopicOptions.parse(
        {
            **base,
            "bookkeeperTLSTrustCertsFilePath": str(pki["ca"]),
            "bookkeeperTLSCertificateFilePath": str(pki["client"]),
            "bookkeeperTLSKeyFilePath": str(pki["client_key"]),
            "bookkeeperTLSHostnameVerificationEnabled": "true",
        }
    )
    assert opts.bookie_tls == BookieTls(str(pki["ca"]), str(pki["client"]), str(pki["client_key"]), True)
