"""A mock Pulsar broker speaking just enough of the binary protocol for the C++
client's producer (and, in subclasses, consumers), with a minimal protobuf scan."""

import contextlib
import socket
import struct
import threading

import pulsar  # a missing pulsar-client must fail the tests, not skip them

from .protobuf_wire import pb_bytes, pb_fields, pb_int


class MockBroker:
    """Just enough of the Pulsar binary protocol for one producer: CONNECT, PARTITIONED_METADATA (0 partitions),
    LOOKUP (connect here), PRODUCER, SEND (captured, receipt = (1, n)), CLOSE_PRODUCER, PING. Field numbers from
    PulsarApi.proto (BaseCommand: type 1; sub-command field number == type number)."""

    def __init__(self, max_message_size=5 * 1024 * 1024):
        self.max_message_size = max_message_size
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = "pulsar://127.0.0.1:%d" % self._sock.getsockname()[1]
        self.entries = []
        self._lock = threading.Lock()
        self._conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _recv(conn, n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    @staticmethod
    def _reply(conn, typ, body):
        cmd = pb_int(1, typ) + pb_bytes(typ, body)
        conn.sendall(struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd)

    def _serve(self, conn):
        try:
            while True:
                (total,) = struct.unpack(">I", self._recv(conn, 4))
                frame = self._recv(conn, total)
                (cmd_size,) = struct.unpack_from(">I", frame)
                cmd = pb_fields(frame[4 : 4 + cmd_size])
                typ = cmd[1][0]
                sub = pb_fields(cmd[typ][0]) if typ in cmd else {}
                if typ == 2:  # CONNECT -> CONNECTED
                    self._reply(
                        conn,
                        3,
                        pb_bytes(1, "mock") + pb_int(2, sub.get(4, [0])[0]) + pb_int(3, self.max_message_size),
                    )
                elif typ == 21:  # PARTITIONED_METADATA -> response: 0 partitions, Success
                    self._reply(conn, 22, pb_int(1, 0) + pb_int(2, sub[2][0]) + pb_int(3, 0))
                elif typ == 23:  # LOOKUP -> Connect to this broker, authoritative
                    self._reply(conn, 24, pb_bytes(1, self.url) + pb_int(3, 1) + pb_int(4, sub[2][0]) + pb_int(5, 1))
                elif typ == 5:  # PRODUCER -> PRODUCER_SUCCESS
                    name = sub.get(4, [b"mock-producer"])[0]
                    self._reply(conn, 17, pb_int(1, sub[3][0]) + pb_bytes(2, name) + pb_int(3, -1))
                elif typ == 6:  # SEND: the rest of the frame is the stored entry
                    with self._lock:
                        self.entries.append(bytes(frame[4 + cmd_size :]))
                        entry_id = len(self.entries) - 1
                    self._reply(
                        conn,
                        7,
                        pb_int(1, sub[1][0]) + pb_int(2, sub[2][0]) + pb_bytes(3, pb_int(1, 1) + pb_int(2, entry_id)),
                    )
                elif typ == 15:  # CLOSE_PRODUCER -> SUCCESS
                    self._reply(conn, 13, pb_int(1, sub[2][0]))
                elif typ == 18:  # PING -> PONG
                    self._reply(conn, 19, b"")
                else:
                    self._handle(conn, typ, sub)
        except (EOFError, OSError):
            pass
        finally:
            conn.close()

    def _handle(self, conn, typ, sub):
        """Commands beyond the producer's (subclasses serve consumers)."""

    def close(self):
        self._sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.close()


CPP_COMPRESSION = {
    "none": pulsar.CompressionType.NONE,
    "lz4": pulsar.CompressionType.LZ4,
    "zlib": pulsar.CompressionType.ZLib,
    "zstd": pulsar.CompressionType.ZSTD,
    "snappy": pulsar.CompressionType.SNAPPY,
}
