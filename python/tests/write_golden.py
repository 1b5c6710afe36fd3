"""Writes every golden case (test/golden/*.input.json, as test_golden.py
reads them) with the etpack this interpreter imports, one file each into
OUT, so that two builds' outputs can be compared byte for byte:
scripts/test_wheel.sh compares each wheel's with the plain build's (the
golden tests compare only decoded structure and segment data).

Usage: python python/tests/write_golden.py OUT
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import etpack  # noqa: E402
import test_golden as g  # noqa: E402


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for case in g.PTE_CASES:
        program, constants, mutable, delegates, named, kwargs = g.pte_arguments(case)
        etpack.save_pte(out / f"{case}.pte", program, constants=constants, mutable=mutable,
                        delegates=delegates, named_data=named, **kwargs)
        # The same program with its constants in a .ptd: the externalizing path.
        if any(constants):
            etpack.save_pte(out / f"{case}.ext.pte", program, constants=constants,
                            mutable=mutable, delegates=delegates, named_data=named,
                            external_constants=out / f"{case}.ext.ptd", **kwargs)
    for case in g.PTD_CASES:
        etpack.save_ptd(out / f"{case}.ptd", g.ptd_tensors(case))
    for case in g.BPTE_CASES:
        etpack.save_bpte(out / f"{case}.bpte", *g.bpte_arguments(case))
    written = sorted(p.name for p in out.iterdir())
    if len(written) < len(g.PTE_CASES) + len(g.PTD_CASES) + len(g.BPTE_CASES):
        sys.exit(f"write_golden: wrote only {written}")
    print(f"write_golden: {len(written)} files in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
