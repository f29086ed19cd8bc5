"""The admin REST API as a metadata source for ``read_topic``, against a local stand-in server:
the requests it sends (paths, bearer token), and one-line errors for an unreachable URL, an unknown
topic (404), malformed JSON, a server that does not answer, and bookie ids the API cannot resolve.
The same reads against a real broker are in ``real_pulsar/test_admin_rest_real.py``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster, _native
from pulsar_entries._standalone import free_port
from pulsar_entries.schemas import topic_schemas

from support.admin_server import FakeAdmin, Reply, redirect

TOPIC = "persistent://public/default/orders"
BASE = "/admin/v2/persistent/public/default/orders"
CLOSED = (
    "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, "
    "length=10, lastEntryId=1, digestType=CRC32C, password=OMITTED, ensembles={0=[%s]}, customMetadata={}}"
)


@pytest.fixture
def fake() -> Iterator[FakeAdmin]:
    with FakeAdmin(not_found=f"Topic {TOPIC} not found") as f:
        yield f


def stats(bookie: str = "127.0.0.1:3181") -> dict[str, Any]:
    return {
        "ledgers": [
            {"ledgerId": 5, "entries": 2, "size": 10, "offloaded": False, "metadata": CLOSED % bookie},
            {"ledgerId": 6, "entries": 0, "size": 0, "offloaded": True},
        ],
        "cursors": {
            "__compaction": {"markDeletePosition": "5:1", "properties": {"CompactedTopicLedger": 9}},
        },
        "compactedLedger": {"ledgerId": 9, "entries": 1, "size": 4, "offloaded": False, "metadata": CLOSED % bookie},
    }


def test_layout_from_the_admin_api_with_a_bearer_token(fake: FakeAdmin) -> None:
    fake.routes = {
        BASE + "/partitions": {"partitions": 0},
        BASE + "/internalStats?metadata=true": stats(),
        BASE + "/internal-info": {
            "ledgers": [
                {"ledgerId": 6, "isOffloaded": True, "offloadedContextUuid": "4090fb34-c3e6-4bdc-a3fb-03db0275ffc9"}
            ]
        },
    }
    admin = _cluster.AdminRest(fake.url, token="s3cr3t", timeout=5)
    layout = _cluster.resolve_topic_admin("orders", admin)
    assert [path for path, _ in fake.requests] == [
        BASE + "/partitions",
        BASE + "/internalStats?metadata=true",
        BASE + "/internal-info",
    ]
    assert all(h.get("Authorization") == "Bearer s3cr3t" for _, h in fake.requests)
    (part,) = layout.partitions
    assert part.partition == -1 and part.horizon == (5, 1)
    first, offloaded = part.ledgers
    assert first.info["last_entry_id"] == 1 and first.info["digest_type"] == "CRC32C"
    # The node built from the text reads back as the same metadata.
    assert _native.ledger_metadata(5, first.metadata) == first.info
    assert offloaded.metadata is None and _cluster.offloaded_uuid(offloaded.offload) == (
        "4090fb34-c3e6-4bdc-a3fb-03db0275ffc9"
    )
    assert part.compacted is not None and part.compacted.ledger_id == 9 and part.compacted.metadata is not None
    assert layout.bookies == {"127.0.0.1:3181": "127.0.0.1:3181"}


def test_a_partitioned_topic_asks_for_each_partition(fake: FakeAdmin) -> None:
    fake.routes = {BASE + "/partitions": {"partitions": 2}}
    for i in range(2):
        fake.routes[f"{BASE}-partition-{i}/internalStats?metadata=true"] = {"ledgers": []}
    layout = _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url))
    assert [(p.topic, p.partition) for p in layout.partitions] == [(f"{TOPIC}-partition-{i}", i) for i in range(2)]
    assert all(h.get("Authorization") is None for _, h in fake.requests)
    with pytest.raises(ValueError, match=r"has no partition \[5\]"):
        _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url), partitions=[5])


def test_one_line_errors(fake: FakeAdmin) -> None:
    fake.routes = {BASE + "/partitions": {"partitions": 0}}
    with pytest.raises(LookupError, match=f"unknown topic {TOPIC}: the broker at .* answered 404 .*not found"):
        pe.read_topic(TOPIC, admin_url=fake.url)
    fake.routes[BASE + "/internalStats?metadata=true"] = b"{not json"
    with pytest.raises(ValueError, match="malformed JSON"):
        pe.read_topic(TOPIC, metadata_url=fake.url)
    fake.routes[BASE + "/internalStats?metadata=true"] = stats(bookie="bk-1")
    fake.routes[BASE + "/internal-info"] = {"ledgers": [{"ledgerId": 6, "isOffloaded": True}]}
    with pytest.raises(ValueError, match="ledger 6 is offloaded but internal-info gives no offload id"):
        pe.read_topic(TOPIC, admin_url=fake.url)
    fake.routes[BASE + "/internal-info"] = {
        "ledgers": [
            {"ledgerId": 6, "isOffloaded": True, "offloadedContextUuid": "4090fb34-c3e6-4bdc-a3fb-03db0275ffc9"}
        ]
    }
    with pytest.raises(ValueError, match=r"bookie ids \['bk-1'\] are not host:port .* bookie_addresses="):
        pe.read_topic(TOPIC, admin_url=fake.url)
    fake.routes[BASE + "/partitions"] = Reply(delay=3)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no complete answer within 1 s"):
        pe.read_topic(TOPIC, admin_url=fake.url, timeout=1)
    assert time.monotonic() - started < 2.5
    with pytest.raises(OSError, match=r"admin REST API http://127\.0\.0\.1:\d+ unreachable"):
        pe.read_topic(TOPIC, admin_url=f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(ValueError, match="give one of metadata_url"):
        pe.read_topic(TOPIC, metadata_url="zk:127.0.0.1:1", admin_url=fake.url)
    with pytest.raises(ValueError, match="give one of metadata_url"):
        pe.read_topic(TOPIC)


def test_a_missing_ledger_metadata_is_asked_again_then_an_error_row(fake: FakeAdmin) -> None:
    """The broker fills ``metadata`` without waiting for ledger handles still opening: a ledger
    without it is asked for again; one that never gets it is an error row, not a silent gap."""
    s = stats()
    del s["ledgers"][0]["metadata"]
    s["ledgers"] = s["ledgers"][:1]
    fake.routes = {BASE + "/partitions": {"partitions": 0}, BASE + "/internalStats?metadata=true": s}
    layout = _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url))
    assert [p for p, _ in fake.requests].count(BASE + "/internalStats?metadata=true") == 3
    (part,) = layout.partitions
    rows = _cluster.read_ledger(part.ledgers[0], -1, None, 0, None, None, "")
    assert rows.to_pylist() == [
        {
            "ledger_id": 5,
            "entry_id": -1,
            "partition": -1,
            "data": None,
            "error": f"ledger 5: {_cluster.NO_METADATA}",
        }
    ]


# --- a broken or hostile broker (issue #26) ---------------------------------------------------------------


def test_the_token_never_follows_a_redirect_to_another_origin(fake: FakeAdmin) -> None:
    """urllib copied ``Authorization`` onto a redirect to any host. Brokers do answer 307 to the broker
    owning a topic, so redirects are followed, but the token goes only to the origin it was given for."""
    with FakeAdmin() as other:
        other.routes = {"/elsewhere": {"partitions": 0}}
        fake.routes = {
            BASE + "/partitions": redirect(other.url + "/elsewhere"),
            "/same-origin": {"partitions": 0},
            "/hop": redirect("/same-origin", 307),
        }
        admin = _cluster.AdminRest(fake.url, token="s3cr3t-token", timeout=5)
        assert admin.get(BASE + "/partitions") == {"partitions": 0}
        assert other.paths() == ["/elsewhere"]
        assert "Authorization" not in other.requests[0][1]
        assert all("s3cr3t-token" not in str(h) for _, h in other.requests)
        # A redirect within the origin keeps the token.
        assert admin.get("/hop") == {"partitions": 0}
        assert [h.get("Authorization") for p, h in fake.requests if p in ("/hop", "/same-origin")] == [
            "Bearer s3cr3t-token",
            "Bearer s3cr3t-token",
        ]
        # The other origin refusing for want of the token says why it was not sent.
        other.routes["/elsewhere"] = Reply(401, b'{"reason": "no token"}')
        with pytest.raises(
            PermissionError, match=r"the credentials are not sent to http://127\.0\.0\.1:.*redirected to"
        ) as e:
            admin.get(BASE + "/partitions")
        assert "s3cr3t-token" not in str(e.value)


def test_the_token_origin_is_scheme_host_and_port() -> None:
    """What "the same origin" means for the token: an https to http downgrade, another port or another
    host is another origin; the default port and the host's case are not a difference."""
    from pulsar_entries._cluster.admin import _origin

    assert _origin("https://Broker:443/admin") == _origin("https://broker/x")
    assert _origin("http://broker/admin") == _origin("http://broker:80/y")
    assert _origin("https://broker:8443/a") != _origin("http://broker:8443/a")
    assert _origin("http://broker:8080/a") != _origin("http://broker:8081/a")
    assert _origin("http://broker:8080/a") != _origin("http://broker.evil:8080/a")


def test_redirects_are_bounded(fake: FakeAdmin) -> None:
    fake.routes = {"/loop": redirect("/loop", 307)}
    with pytest.raises(OSError, match=r"more than 5 redirects"):
        _cluster.AdminRest(fake.url, timeout=5).get("/loop")
    assert fake.paths().count("/loop") == 6
    fake.routes["/ftp"] = redirect("ftp://127.0.0.1/x")
    with pytest.raises(OSError, match=r"redirected to 'ftp://127\.0\.0\.1/x', not http"):
        _cluster.AdminRest(fake.url, timeout=5).get("/ftp")


def test_timeout_bounds_the_whole_request_not_each_read(fake: FakeAdmin) -> None:
    """A broker dripping its reply a byte every 0.25 s held a request with timeout=2 for minutes
    (every read got its bytes in time); now the whole request ends at the timeout."""
    body = json.dumps({"partitions": 0}).encode() + b" " * 40
    fake.routes = {BASE + "/partitions": Reply(body=body, drip=0.25)}
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"GET http://127\.0\.0\.1:\d+/admin/v2/.*: no complete answer within 2 s"):
        _cluster.AdminRest(fake.url, timeout=2).get(BASE + "/partitions")
    assert time.monotonic() - started < 4
    # A deadline shared by several requests ends each one by it.
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no complete answer within 1 s"):
        _cluster.AdminRest(fake.url, timeout=30).get(BASE + "/partitions", deadline=time.monotonic() + 1)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("timeout", [0, -5, float("nan"), float("inf"), "soon", True])
def test_admin_timeout_must_be_a_positive_number(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout: expected a positive number of seconds"):
        _cluster.AdminRest("http://127.0.0.1:1", timeout=timeout)
    with pytest.raises(ValueError, match="timeout: expected a positive number of seconds"):
        _cluster.open_store("zk:127.0.0.1:1", timeout=timeout)


def test_a_reply_above_the_cap_is_refused_without_reading_it(fake: FakeAdmin) -> None:
    # A claimed Content-Length of 2 GB (only a few bytes sent): refused on the header, at once.
    fake.routes = {BASE + "/partitions": Reply(body=b'{"partitions": 0}', length=2_000_000_000)}
    started = time.monotonic()
    with pytest.raises(
        OSError, match=r"GET http://.*/partitions: the reply is 2,000,000,000 bytes .*cap of 67,108,864"
    ):
        _cluster.AdminRest(fake.url, timeout=10).get(BASE + "/partitions")
    assert time.monotonic() - started < 5
    # A body streamed without a length, past a (small) cap: refused once the count passes it.
    fake.routes[BASE + "/internalStats?metadata=true"] = Reply(body=b'{"ledgers": [', length=-1, stream=5_000_000)
    admin = _cluster.AdminRest(fake.url, timeout=10, max_reply_bytes=1_000_000)
    with pytest.raises(OSError, match=r"internalStats\?metadata=true: the reply is more than 1,000,000 bytes"):
        admin.get(BASE + "/internalStats?metadata=true")
    # Under the cap, an answer is read whole.
    fake.routes["/ok"] = Reply(body=json.dumps({"x": "y" * 500_000}).encode())
    assert len(admin.get("/ok")["x"]) == 500_000


def test_errors_and_repr_never_show_the_token_or_url_credentials(fake: FakeAdmin) -> None:
    fake.routes = {"/echo": Reply(500, b'{"reason": "bad token tok-SECRET-42"}')}
    url = fake.url.replace("http://", "http://alice:pa55word@")
    admin = _cluster.AdminRest(url, token="tok-SECRET-42", timeout=5)
    assert "tok-SECRET-42" not in repr(admin) and "pa55word" not in repr(admin)
    with pytest.raises(OSError) as e:
        admin.get("/echo")
    assert "HTTP 500" in str(e.value)
    assert "tok-SECRET-42" not in str(e.value) and "pa55word" not in str(e.value)
    with pytest.raises(ValueError) as bad:
        _cluster.AdminRest("ftp://bob:hunter2@host/x")
    assert "hunter2" not in str(bad.value)


@pytest.mark.parametrize(
    "partitions, message",
    [
        (10_000_000, "10000000"),
        (-5, "-5"),
        (True, "True"),
        (2.0, "2.0"),
        ("4", "'4'"),
    ],
)
def test_a_partition_count_out_of_range_is_refused(fake: FakeAdmin, partitions: Any, message: str) -> None:
    """``partitions: 10**7`` built ten million names first (29 s, then MemoryError); -5 read as no rows."""
    fake.routes = {BASE + "/partitions": {"partitions": partitions}}
    started = time.monotonic()
    with pytest.raises(ValueError, match=rf"topic {TOPIC}: .*partitions is {message}, expected .*0 to 100,000"):
        _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url, timeout=5))
    assert time.monotonic() - started < 5


def test_a_partition_count_from_the_metadata_store_is_checked() -> None:
    """The same bound on the ZooKeeper / RocksDB path (the partitioned-topic node's count)."""
    from pulsar_entries._cluster.layout import resolve_topic

    node = _native.topic_paths(TOPIC)["partitioned_metadata"]

    class Store:
        def get(self, path: str) -> bytes | None:
            return json.dumps({"partitions": 10_000_000}).encode() if path == node else None

        def children(self, path: str) -> list[str]:
            return []

        def close(self) -> None:
            pass

    started = time.monotonic()
    with pytest.raises(ValueError, match=r"partition count at .* is 10000000, expected a partition count"):
        resolve_topic(TOPIC, Store())
    assert time.monotonic() - started < 5


def _malformed(path: str, value: Any) -> dict[str, Any]:
    """``stats()`` with the field at ``path`` (dotted; ``[i]`` for list items) set to ``value``."""
    s = stats()
    keys = path.replace("[", ".").replace("]", "").split(".")
    node: Any = s
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return s


DROP = object()


@pytest.mark.parametrize(
    "path, value, shown",
    [
        ("ledgers[0].ledgerId", 7.9, "internalStats.ledgers[0].ledgerId is 7.9"),
        ("ledgers[0].ledgerId", "5", "internalStats.ledgers[0].ledgerId is '5'"),
        ("ledgers[0].ledgerId", True, "internalStats.ledgers[0].ledgerId is True"),
        ("ledgers[0].ledgerId", -3, "internalStats.ledgers[0].ledgerId is -3"),
        ("ledgers[0].ledgerId", DROP, "internalStats.ledgers[0].ledgerId is None"),
        ("ledgers[0]", 7, "internalStats.ledgers[0] is 7"),
        ("ledgers[1]", ["a"], "internalStats.ledgers[1] is ['a']"),
        ("ledgers[0].entries", -1, "internalStats.ledgers[0].entries is -1"),
        ("ledgers[0].entries", "2", "internalStats.ledgers[0].entries is '2'"),
        ("ledgers[0].size", 1.5, "internalStats.ledgers[0].size is 1.5"),
        ("ledgers[0].metadata", 12, "internalStats.ledgers[0].metadata is 12"),
        ("ledgers[0].metadata", {"a": 1}, "internalStats.ledgers[0].metadata is {'a': 1}"),
        ("ledgers[1].offloaded", "yes", "internalStats.ledgers[1].offloaded is 'yes'"),
        ("cursors", [], "internalStats.cursors is []"),
        ("cursors.__compaction", "x", "internalStats.cursors.__compaction is 'x'"),
        ("cursors.__compaction.markDeletePosition", "5", "markDeletePosition is '5'"),
        ("cursors.__compaction.markDeletePosition", "a:b", "markDeletePosition is 'a:b'"),
        ("cursors.__compaction.markDeletePosition", 51, "markDeletePosition is 51"),
        ("compactedLedger", 9, "internalStats.compactedLedger is 9"),
        ("compactedLedger.ledgerId", "9", "internalStats.compactedLedger.ledgerId is '9'"),
        ("compactedLedger.ledgerId", 9.5, "internalStats.compactedLedger.ledgerId is 9.5"),
        ("compactedLedger.metadata", 3, "internalStats.compactedLedger.metadata is 3"),
        ("compactedLedger.entries", "x" * 200, "internalStats.compactedLedger.entries is 'xxxx"),
    ],
)
def test_malformed_internal_stats_name_the_field(fake: FakeAdmin, path: str, value: Any, shown: str) -> None:
    """Each wrong shape is one ValueError naming the topic, the field and the value: not ``KeyError:
    'ledgerId'``, ``AttributeError: 'int' object has no attribute 'get'``, nor 7.9 read as ledger 7."""
    s = _malformed(path, value)
    if value is DROP:
        del s["ledgers"][0]["ledgerId"]
    fake.routes = {
        BASE + "/partitions": {"partitions": 0},
        BASE + "/internalStats?metadata=true": s,
        BASE + "/internal-info": {"ledgers": [{"ledgerId": 6, "isOffloaded": True, "offloadedContextUuid": "u-1"}]},
    }
    with pytest.raises(ValueError) as e:
        _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url, timeout=5))
    assert type(e.value) is ValueError
    message = str(e.value)
    assert message.startswith(f"topic {TOPIC}: the broker's ") and shown in message, message
    assert "\n" not in message and len(message) < 300


@pytest.mark.parametrize(
    "info, shown",
    [
        ({"ledgers": 5}, "internal-info.ledgers is 5"),
        ({"ledgers": [3]}, "internal-info.ledgers[0] is 3"),
        ({"ledgers": [{"ledgerId": "6", "isOffloaded": True}]}, "internal-info.ledgers[0].ledgerId is '6'"),
        ({"ledgers": [{"ledgerId": 6, "isOffloaded": "true"}]}, "internal-info.ledgers[0].isOffloaded is 'true'"),
        (
            {"ledgers": [{"ledgerId": 6, "isOffloaded": True, "offloadedContextUuid": 4}]},
            "internal-info.ledgers[0].offloadedContextUuid is 4",
        ),
        ([1, 2], "internal-info is [1, 2]"),
    ],
)
def test_malformed_internal_info_names_the_field(fake: FakeAdmin, info: Any, shown: str) -> None:
    fake.routes = {
        BASE + "/partitions": {"partitions": 0},
        BASE + "/internalStats?metadata=true": stats(),
        BASE + "/internal-info": info,
    }
    with pytest.raises(ValueError, match="the broker's ") as e:
        _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url, timeout=5))
    assert type(e.value) is ValueError and shown in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "answer, shown",
    [
        ({"getSchemaResponses": [7]}, "getSchemaResponses[0] is 7"),
        ({"getSchemaResponses": [{"version": "x", "type": "AVRO"}]}, "getSchemaResponses[0].version is 'x'"),
        ({"getSchemaResponses": [{"version": 0, "type": 5}]}, "getSchemaResponses[0].type is 5"),
        ({"getSchemaResponses": [{"version": 0, "type": "STRING", "properties": 3}]}, ".properties is 3"),
    ],
)
def test_malformed_schema_answers_name_the_field(fake: FakeAdmin, answer: Any, shown: str) -> None:
    fake.routes = {"/admin/v2/schemas/public/default/orders/schemas": answer}
    with pytest.raises(ValueError) as e:
        topic_schemas(TOPIC, admin_url=fake.url, timeout=5)
    assert type(e.value) is ValueError and shown in str(e.value), str(e.value)


def test_deeply_nested_json_is_a_one_line_error(fake: FakeAdmin) -> None:
    fake.routes = {"/deep": b"[" * 200_000 + b"]" * 200_000}
    with pytest.raises(ValueError, match="JSON nested too deeply"):
        _cluster.AdminRest(fake.url, timeout=10).get("/deep")


@pytest.mark.parametrize("answer", [{"a": 1}, 5, ["ok", 3]])
def test_a_malformed_topic_list_for_a_pattern_names_it(fake: FakeAdmin, answer: Any) -> None:
    """The Spark source's ``topicsPattern`` lists a namespace's topics over REST (checked without Spark)."""
    from pulsar_entries.spark._topic_options import TopicOptions, _pattern_topics

    fake.routes = {
        "/admin/v2/persistent/public/default": answer,
        "/admin/v2/persistent/public/default/partitioned": [],
    }
    opts = TopicOptions.parse({"topicsPattern": "persistent://public/default/.*", "adminUrl": fake.url})
    with pytest.raises(ValueError, match=r"namespace public/default: the broker's topic list at /admin/v2/"):
        _pattern_topics(opts)
