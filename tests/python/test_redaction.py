"""Secrets never leave in text (issue #26): a URI's credentials, secret query parameters, the admin token
and the ledger password stay out of errors and ``repr``s, on the CLI and in the Spark source's options
(checked on the options class, without starting Spark). Also: timeouts that are not a positive number of
seconds are refused naming the option."""

from __future__ import annotations

import pytest

from pulsar_entries import offload
from pulsar_entries._redact import filesystem_from_uri, redact, redact_uri
from pulsar_entries.cli import main
from pulsar_entries.cli._topic import ClusterTopic
from pulsar_entries.spark._topic_options import TopicOptions

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYz"
KEY = "AKIAIOSFODNN7EXAMPLE"
#: An offload URI pyarrow refuses (an unknown query parameter), with credentials in it.
BAD_S3 = f"s3://{KEY}:{SECRET}@bucket/ledgers?bogus=1"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.c3ViOmFkbWlu.sig-TOKEN-42"
TOPIC = "persistent://public/default/orders"


@pytest.mark.parametrize(
    "text, gone, kept",
    [
        (f"option x={BAD_S3!r}: failed", [KEY, SECRET], ["s3://***@bucket/ledgers"]),
        ("GET http://alice:pa55@broker:8080/admin/v2 failed", ["alice", "pa55"], ["http://***@broker:8080/admin/v2"]),
        (
            "s3://b/p?endpoint_override=127.0.0.1:9000&secret_key=S1&access_key=A1&X-Amz-Signature=S2&scheme=http",
            ["S1", "A1", "S2"],
            ["endpoint_override=127.0.0.1:9000", "secret_key=***", "access_key=***", "scheme=http"],
        ),
        ("https://h/x?token=T1&sig=S3#frag", ["T1", "S3"], ["token=***", "sig=***"]),
        (f"header Authorization: Bearer {TOKEN}, refused", [TOKEN], ["Bearer ***, refused"]),
        ("http://127.0.0.1:8080/admin/v2/persistent/a/b/c?metadata=true", [], ["127.0.0.1:8080/admin/v2"]),
    ],
)
def test_redact_uri_anywhere_in_a_message(text: str, gone: list[str], kept: list[str]) -> None:
    out = redact_uri(text)
    for secret in gone:
        assert secret not in out, out
    for part in kept:
        assert part in out, out


def test_redact_known_secrets() -> None:
    assert redact(f"the broker said {TOKEN} is bad", TOKEN, None, b"") == "the broker said *** is bad"
    assert redact("password was hunter2", b"hunter2") == "password was ***"


def test_a_rejected_offload_uri_never_shows_its_credentials() -> None:
    """pyarrow's own message may echo the URI; ours echoed it whole, keys included."""
    for call in (
        lambda: filesystem_from_uri(BAD_S3, "--offload-uri"),
        lambda: filesystem_from_uri(f"nope://{KEY}:{SECRET}@host/x"),
        lambda: offload.discover(f"nope://{KEY}:{SECRET}@host/x"),
        lambda: TopicOptions.parse({"topic": TOPIC, "metadataUrl": "zk:127.0.0.1:1", "offloadPath": BAD_S3}).offload(),
    ):
        with pytest.raises(ValueError) as e:
            call()
        assert SECRET not in str(e.value) and KEY not in str(e.value), str(e.value)
        assert "***@" in str(e.value)


def test_topic_options_repr_masks_secrets() -> None:
    opts = TopicOptions.parse(
        {
            "topic": TOPIC,
            "adminUrl": "https://ops:pa55word@broker:8443",
            "adminToken": TOKEN,
            "ledgerPassword": "ledger-pw-77",
            "offloadPath": f"s3://{KEY}:{SECRET}@bucket/ledgers?endpoint_override=127.0.0.1:9000",
        }
    )
    assert opts.admin_token == TOKEN and opts.ledger_password == b"ledger-pw-77"  # the values themselves stay
    shown = repr(opts)
    for secret in (TOKEN, "ledger-pw-77", "pa55word", KEY, SECRET):
        assert secret not in shown, shown
    assert "admin_token='***'" in shown and "ledger_password=b'***'" in shown
    assert "offload_path='s3://***@bucket/ledgers?endpoint_override=127.0.0.1:9000'" in shown


def test_cluster_topic_repr_masks_the_token() -> None:
    topic = ClusterTopic(TOPIC, {"metadata_url": "http://u:pw9@broker:8080", "admin_token": TOKEN}, {})
    assert TOKEN not in repr(topic) and "pw9" not in repr(topic) and "'admin_token': '***'" in repr(topic)


def test_cli_errors_never_show_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    # A bad --offload-uri: the one-line error names the option, without the keys.
    code = main(["--engine", "local", "inspect", TOPIC, "--metadata-url", "zk:127.0.0.1:1", "--offload-uri", BAD_S3])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("pulsar-entries: error: --offload-uri 's3://***@bucket/ledgers?bogus=1'"), err
    assert SECRET not in err and KEY not in err and err.count("\n") == 1
    # Any error echoing a credentialed URL, or the token, goes through the same redaction.
    code = main(
        ["--engine", "local", "inspect", TOPIC, "--metadata-url", f"ftp://{KEY}:{SECRET}@h/x", "--admin-token", TOKEN]
    )
    err = capsys.readouterr().err
    assert code == 1 and SECRET not in err and KEY not in err and TOKEN not in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5", "soon"])
def test_cli_timeout_must_be_a_positive_number(capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--engine", "local", "inspect", TOPIC, "--metadata-url", "zk:127.0.0.1:1", "--timeout", value])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"--timeout: expected a positive number of seconds, got '{value}'" in err.splitlines()[-1], err


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5", "soon"])
def test_spark_timeout_option_must_be_a_positive_number(value: str) -> None:
    with pytest.raises(ValueError, match=f"option timeout: expected a positive number of seconds, got '{value}'"):
        TopicOptions.parse({"topic": TOPIC, "metadataUrl": "zk:127.0.0.1:1", "timeout": value})
