"""The admin REST API as a metadata source for ``read_topic``, against a local stand-in server:
the requests it sends (paths, bearer token), and one-line errors for an unreachable URL, an unknown
topic (404), malformed JSON, a server that does not answer, and bookie ids the API cannot resolve.
The same reads against a real broker are in ``real_pulsar/test_admin_rest_real.py``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import pulsar_entries as pe
from pulsar_entries import _cluster, _native
from pulsar_entries._standalone import free_port

TOPIC = "persistent://public/default/orders"
BASE = "/admin/v2/persistent/public/default/orders"
CLOSED = (
    "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=CLOSED, "
    "length=10, lastEntryId=1, digestType=CRC32C, password=OMITTED, ensembles={0=[%s]}, customMetadata={}}"
)


class Fake:
    """Canned answers by path; records each request's path and headers."""

    def __init__(self, routes: dict[str, Any]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, dict[str, str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append((self.path, dict(self.headers)))
                answer = fake.routes.get(self.path)
                if answer == "sleep":
                    time.sleep(3)
                    answer = {}
                if answer is None:
                    body, code = json.dumps({"reason": f"Topic {TOPIC} not found"}).encode(), 404
                elif isinstance(answer, bytes):
                    body, code = answer, 200
                else:
                    body, code = json.dumps(answer).encode(), 200
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[Fake]:
    f = Fake({})
    yield f
    f.close()


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


def test_layout_from_the_admin_api_with_a_bearer_token(fake: Fake) -> None:
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
    assert offloaded.metadata is None and _cluster._offloaded_uuid(offloaded.offload) == (
        "4090fb34-c3e6-4bdc-a3fb-03db0275ffc9"
    )
    assert part.compacted is not None and part.compacted.ledger_id == 9 and part.compacted.metadata is not None
    assert layout.bookies == {"127.0.0.1:3181": "127.0.0.1:3181"}


def test_a_partitioned_topic_asks_for_each_partition(fake: Fake) -> None:
    fake.routes = {BASE + "/partitions": {"partitions": 2}}
    for i in range(2):
        fake.routes[f"{BASE}-partition-{i}/internalStats?metadata=true"] = {"ledgers": []}
    layout = _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url))
    assert [(p.topic, p.partition) for p in layout.partitions] == [(f"{TOPIC}-partition-{i}", i) for i in range(2)]
    assert all(h.get("Authorization") is None for _, h in fake.requests)
    with pytest.raises(ValueError, match=r"has no partition \[5\]"):
        _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url), partitions=[5])


def test_one_line_errors(fake: Fake) -> None:
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
    fake.routes[BASE + "/partitions"] = "sleep"
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no answer within 1 s"):
        pe.read_topic(TOPIC, admin_url=fake.url, timeout=1)
    assert time.monotonic() - started < 2.5
    with pytest.raises(OSError, match=r"admin REST API http://127\.0\.0\.1:\d+ unreachable"):
        pe.read_topic(TOPIC, admin_url=f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(ValueError, match="give one of metadata_url"):
        pe.read_topic(TOPIC, metadata_url="zk:127.0.0.1:1", admin_url=fake.url)
    with pytest.raises(ValueError, match="give one of metadata_url"):
        pe.read_topic(TOPIC)


def test_a_missing_ledger_metadata_is_asked_again_then_an_error_row(fake: Fake) -> None:
    """The broker fills ``metadata`` without waiting for ledger handles still opening: a ledger
    without it is asked for again; one that never gets it is an error row, not a silent gap."""
    s = stats()
    del s["ledgers"][0]["metadata"]
    s["ledgers"] = s["ledgers"][:1]
    fake.routes = {BASE + "/partitions": {"partitions": 0}, BASE + "/internalStats?metadata=true": s}
    layout = _cluster.resolve_topic_admin(TOPIC, _cluster.AdminRest(fake.url))
    assert [p for p, _ in fake.requests].count(BASE + "/internalStats?metadata=true") == 3
    (part,) = layout.partitions
    rows = _cluster._read_ledger(part.ledgers[0], -1, None, 0, None, None, "")
    assert rows.to_pylist() == [
        {
            "ledger_id": 5,
            "entry_id": -1,
            "partition": -1,
            "data": None,
            "error": f"ledger 5: {_cluster.NO_METADATA}",
        }
    ]
