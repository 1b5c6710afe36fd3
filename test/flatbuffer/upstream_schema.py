#!/usr/bin/env python3
"""Copies etpack's schemas under the namespaces ExecuTorch's own generated
code uses, so a test can compile both sets of generated headers together.

Usage: upstream_schema.py OUTDIR SCHEMA.fbs...
"""
import os
import sys

RENAMES = [("etpack.pte_fb", "executorch_flatbuffer"),
           ("etpack.ptd_fb", "flat_tensor_flatbuffer"),
           ("etpack.bpte_fb", "bundled_program_flatbuffer")]

outdir = sys.argv[1]
for path in sys.argv[2:]:
    text = open(path).read()
    for ours, theirs in RENAMES:
        text = text.replace(ours, theirs)
    with open(os.path.join(outdir, os.path.basename(path)), "w") as f:
        f.write(text)
