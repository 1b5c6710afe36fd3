#!/usr/bin/env python3
"""Makes the pte_reader regressions misaligned_*_offsets.pte from a golden.

Usage: misalign_subsegment_offsets.py IN.pte OUT.pte constant|mutable

Moves the [uint64] offsets of the constant segment (or of the first
mutable-data segment) to an address that is 4- but not 8-aligned. The
FlatBuffers verifier checks vectors only to 4 bytes, so the file still
verifies; a reader that loads the offsets through a uint64_t pointer has
undefined behaviour (UBSan: misaligned load). 128 bytes are inserted at the
segment base to hold the moved vector; program_size grows to cover it and
segment_base_offset moves past it (segment offsets are relative to the base).
"""
import struct
import sys


def main():
    src, dst, which = sys.argv[1:4]
    b = bytearray(open(src, 'rb').read())
    assert b[8:12] == b'eh00', 'no extended header'
    sbase = struct.unpack_from('<Q', b, 24)[0]

    def u32(o):
        return struct.unpack_from('<I', b, o)[0]

    def field(table, slot):
        vt = table - struct.unpack_from('<i', b, table)[0]
        at = 4 + 2 * slot
        if at >= struct.unpack_from('<H', b, vt)[0]:
            return None
        fo = struct.unpack_from('<H', b, vt + at)[0]
        return table + fo if fo else None

    root = u32(0)
    if which == 'constant':
        f = field(root, 5)  # Program.constant_segment
        sub = f + u32(f)
    else:
        f = field(root, 6)  # Program.mutable_data_segments
        vec = f + u32(f)
        sub = vec + 4 + u32(vec + 4)
    off_field = field(sub, 1)  # SubsegmentOffsets.offsets
    vec = off_field + u32(off_field)
    n = u32(vec)
    vals = struct.unpack_from('<%dQ' % n, b, vec + 4)

    insert = 128
    moved = sbase + 8  # length here, data at moved + 4
    blob = bytearray(insert)
    struct.pack_into('<I', blob, 8, n)
    struct.pack_into('<%dQ' % n, blob, 12, *vals)
    b[sbase:sbase] = blob
    struct.pack_into('<QQ', b, 16, moved + 4 + 8 * n, sbase + insert)
    struct.pack_into('<I', b, off_field, moved - off_field)
    assert (moved + 4) % 8 == 4
    open(dst, 'wb').write(b)


if __name__ == '__main__':
    main()
