"""Issue 36, model 5: the LoRA program (ModelArgs r / lora_alpha /
target_modules), its foundation's weights in a .ptd and the adapter's inside
the .pte. test_dropin.py runs every drop-in check on it (case "lora"); this
checks that the split is the one meant."""

import realcheck as rc


def test_lora_adapter_inside_foundation_outside(case_lora):
    for files in (case_lora.upstream, case_lora.etpack):
        (ptd,) = files.ptds
        assert ptd.name == "lora_foundation.ptd"
        entries = [r["name"] for r in rc.cli_json("inspect", "--sizes", "--all", "--json", ptd)["rows"]
                   if r["kind"] == "entry"]
        assert entries and not any("lora" in n for n in entries)
        program = rc.decode_pte(rc.read(files.pte))
        # The adapter's XNNPACK weights: named data inside the .pte.
        assert program.named_data is not None and program.named_data.pte_data
