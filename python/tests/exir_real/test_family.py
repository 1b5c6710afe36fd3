"""Issue 36, "A real family shared": the 8da4w XNNPACK Llama at three context
windows, once with its weights inside each .pte and once with a .ptd per
variant, made into thin programs and one shared .ptd by `etpack share`."""

import copy
import hashlib
import json
import re

import pytest

import realcheck as rc
import realmodels
from realmodels import CONTEXTS, timed

DATA_KINDS = {"constant", "named_data", "entry"}
# XNNPACK names its weights by the SHA-256 of their packed bytes.
XNNPACK_KEY = re.compile(r"^(scale_)?[0-9a-f]{64}$")


def _variant(root, name, context, tag):
    def make():
        edge, config = realmodels.export_llama(context, True, tag)
        # One serialization is enough here (upstream's: what a publisher has).
        return realmodels.write_program(copy.deepcopy(edge).to_executorch(config),
                                        root / name, name)
    return timed(name, make)


@pytest.fixture(scope="session", params=["inside", "ptd"])
def family(request, root):
    """{context: Files} of one family; the smallest window's variant is the
    one test_dropin.py already checks."""
    if request.param == "inside":
        first = request.getfixturevalue("case_llama_8da4w").upstream
        name = "llama_8da4w_c{}"
    else:
        first = request.getfixturevalue("case_llama_8da4w_ptd").upstream
        name = "llama_8da4w_ptd_c{}"
    variants = {CONTEXTS[0]: first}
    for context in CONTEXTS[1:]:
        n = name.format(context)
        variants[context] = _variant(root / "family", n,
                                     context, n if request.param == "ptd" else None)
    return request.param, variants


def _items(path):
    """(kind, name, content digest, size) of every row of inspect --sizes."""
    data = rc.read(path)
    rows = rc.cli_json("inspect", "--sizes", "--all", "--json", path)["rows"]
    return [(r["kind"], r.get("name", ""),
             hashlib.sha256(data[r["offset"]:r["offset"] + r["size"]]).hexdigest(), r["size"])
            for r in rows]


def _size(files):
    return sum(p.stat().st_size for p in (files.pte, *files.ptds))


def test_family_shared(family, tmp_path):
    form, variants = family
    inputs = [f.pte for f in variants.values()] + [p for f in variants.values() for p in f.ptds]
    out = tmp_path / "shared"
    # XNNPACK's named-data keys (SHA-256 of the packed weights) of each variant.
    keys = {}
    for context, files in variants.items():
        rows = [r for p in (files.pte, *files.ptds) for r in _items(p)]
        keys[context] = sorted(n for k, n, _, _ in rows
                               if k in ("named_data", "entry") and XNNPACK_KEY.match(n))
    equal = all(k == keys[CONTEXTS[0]] for k in keys.values())
    rc.NOTES.append(f"family {form}: XNNPACK named-data keys equal across "
                    f"{list(variants)}: {equal} ({len(keys[CONTEXTS[0]])} keys)")
    assert equal, keys
    # --min-bytes 0: at these tiny dims most weights are under the 4 KiB default.
    r = rc.cli("share", *inputs, "-o", out, "--min-bytes", "0", "--json", check=False)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    shared = out / "shared.ptd"
    assert shared.exists()
    for s in report["stayed"]:
        rc.NOTES.append(f"family {form}: stayed {s['size']} B x{s['copies']}: {s['reason']}: "
                        + ", ".join(i["name"] for i in s["items"][:3]))

    # The family's size: one whole variant, plus for each other variant what
    # is truly its own (every byte but the data items all variants hold alike).
    contents = [{d for p in (f.pte, *f.ptds) for k, _, d, _ in _items(p) if k in DATA_KINDS}
                for f in variants.values()]
    common = set.intersection(*contents)
    own = {c: sum(s for p in (f.pte, *f.ptds) for k, _, d, s in _items(p)
                  if k not in DATA_KINDS or d not in common) for c, f in variants.items()}
    total = sum(p.stat().st_size for p in out.iterdir())
    one = max(_size(f) for f in variants.values())
    bound = 1.05 * one + sum(own.values()) - own[max(variants, key=lambda c: _size(variants[c]))]
    rc.NOTES.append(f"family {form}: {total} B shared vs {sum(map(_size, variants.values()))} B "
                    f"before; bound {bound:.0f} (one variant {one}, own bytes {own})")
    assert total <= bound

    # Every thin program loads with the shared file alone (executorch.runtime
    # takes one data_path) and generates its original's tokens.
    leftovers = sorted(p.name for p in out.glob("*.ptd") if p != shared)
    for context, files in variants.items():
        expected = rc.greedy(rc.load(files.pte, files.data_path), rc.PROMPT, 16)
        thin = out / files.pte.name
        rc.cli("verify", thin, shared)
        got = rc.greedy(rc.load(thin, shared), rc.PROMPT, 16)
        assert got == expected, context
    assert leftovers == []
