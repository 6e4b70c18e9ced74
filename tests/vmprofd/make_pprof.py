#!/usr/bin/env python3
"""tests/vmprofd/make_pprof.py — small pprof profiles written by hand (a
protobuf encoder of the few fields needed, proto/profile.proto's numbers),
for what vmprofd itself never writes: another tool's profiles.

    make_pprof.py KIND OUT

KIND:
  alloc         symbolized, sample types alloc_objects/count, alloc_space/bytes
                (Go's heap profile types; vmprofd --event alloc writes them)
  unsymbolized  samples/count, cpu/nanoseconds, locations with addresses only
  badstring     a function name pointing past the string table
  badlocation   a sample naming a location the profile lacks
OUT ends in .gz: gzipped."""
import gzip
import sys


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, value):
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def packed(num, values):
    return field(num, b"".join(varint(v) for v in values))


def profile(kind):
    strings = ["", "samples", "count", "cpu", "nanoseconds", "main", "work", "other"]
    if kind == "alloc":
        strings[1:5] = ["alloc_objects", "count", "alloc_space", "bytes"]
    msg = b""
    msg += field(1, field(1, 1) + field(2, 2))
    msg += field(1, field(1, 3) + field(2, 4))
    symbolized = kind != "unsymbolized"
    for fid, name in ((1, 5), (2, 6), (3, 7)):
        if kind == "badstring" and fid == 2:
            name = 99
        msg += field(5, field(1, fid) + field(2, name) + field(3, name))
    for lid in (1, 2, 3):
        loc = field(1, lid) + field(3, 0x1000 * lid)
        if symbolized:
            loc += field(4, field(1, lid) + field(2, 10 + lid))
        msg += field(4, loc)
    stacks = [([2, 1], [30, 30000000]), ([3, 1], [10, 10000000])]
    if kind == "badlocation":
        stacks.append(([7, 1], [1, 1000000]))
    for locs, values in stacks:
        msg += field(2, packed(1, locs) + packed(2, values))
    for s in strings:
        msg += field(6, s)
    msg += field(14, 3)
    return msg


def main():
    kind, out = sys.argv[1], sys.argv[2]
    data = profile(kind)
    if out.endswith(".gz"):
        data = gzip.compress(data)
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
