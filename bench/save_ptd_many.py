#!/usr/bin/python3
"""Part of the `plan` job of scripts/bench.sh: etpack.save_ptd of N tiny
entries (16-byte `bytes`, 1,000 distinct contents in turn: blobs, so that
500,000 of them fit the verifier's table limit in one file), for peak RSS
under /usr/bin/time -v against `etpack verify` of the file written.

  bench/save_ptd_many.py --module-dir build-release/python N OUT.ptd [--shard BYTES]

Prints "before_save_kib K" to stderr: the process's peak RSS once the
arrays are built (interpreter, numpy and the inputs), so that the save's own
share of the peak can be told from the inputs'.
"""

import argparse
import resource
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module-dir", required=True)
    p.add_argument("count", type=int)
    p.add_argument("out")
    p.add_argument("--shard", type=int, default=None)
    args = p.parse_args()
    sys.path.insert(0, args.module_dir)
    import etpack

    contents = [i.to_bytes(16, "little") for i in range(1000)]
    tensors = {f"layers.{i}.weight": contents[i % 1000] for i in range(args.count)}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"before_save_kib {before}", file=sys.stderr)
    etpack.save_ptd(args.out, tensors, max_shard_bytes=args.shard)


if __name__ == "__main__":
    main()
