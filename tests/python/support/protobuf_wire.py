"""The protobuf wire format by hand, for the fakes that speak Pulsar's and BookKeeper's protocols:
a minimal field scan and the writers of varint and length-delimited fields."""


def read_varint(buf, i):
    result = shift = 0
    while True:
        if i >= len(buf):
            raise AssertionError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def pb_fields(buf):
    """Minimal protobuf scan: {field_number: [raw values]} (varints as int, length-delimited as bytes)."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = read_varint(buf, i)
        elif wire == 2:
            n, i = read_varint(buf, i)
            assert i + n <= len(buf), "truncated length-delimited field"
            val = bytes(buf[i : i + n])
            i += n
        elif wire == 1:
            val = bytes(buf[i : i + 8])
            i += 8
        elif wire == 5:
            val = bytes(buf[i : i + 4])
            i += 4
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(num, []).append(val)
    assert i == len(buf), "protobuf overran its buffer"
    return out


def pb_varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_int(num, value):
    return pb_varint(num << 3) + pb_varint(value)


def pb_bytes(num, value):
    if isinstance(value, str):
        value = value.encode()
    return pb_varint(num << 3 | 2) + pb_varint(len(value)) + value
