"""The models of issue 36, exported by the installed executorch, and each
export serialized twice: by upstream's serializer and by etpack.

Everything here is deterministic: random weights from a fixed seed, so two
context windows of the Llama get the same weights (what makes them a family).
"""

import copy
import dataclasses
import os
import pathlib
import time

import pytest
import torch

# Registers the quantized kernels (embedding_byte) with the runtime too.
import executorch.kernels.quantized  # noqa: F401
from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
from executorch.exir.program import _program

SEED = 0
# The family's context windows; the first is also models 1 and 2's.
CONTEXTS = (128, 256, 512)
# Seconds each export took (export, lower, serializations), for the summary.
TIMES = {}


def timed(name, fn):
    t = time.monotonic()
    try:
        return fn()
    finally:
        TIMES[name] = time.monotonic() - t

DIM, LAYERS, HEADS, KV_HEADS, VOCAB, HIDDEN = 64, 2, 4, 2, 128, 128


@dataclasses.dataclass
class Files:
    """One side's files: the .pte (or .bpte) and the .ptd files it loads with."""
    pte: pathlib.Path
    ptds: list

    @property
    def data_path(self):
        # executorch.runtime takes one data file: the cases here have at most one.
        assert len(self.ptds) <= 1, self.ptds
        return self.ptds[0] if self.ptds else None


@dataclasses.dataclass
class Case:
    """One export written both ways, with the inputs its methods run on."""
    name: str
    upstream: Files
    etpack: Files
    # method -> list of calls (each a list of inputs), run in order on one
    # loaded method (state such as a KV cache carries from call to call).
    calls: dict
    llama: bool = False


# LoRA as torchtune's adapter_config.json names its targets.
LORA = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"])


def llama_model(context, quantized, lora=False):
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    torch.manual_seed(SEED)
    args = ModelArgs(dim=DIM, n_layers=LAYERS, n_heads=HEADS, n_kv_heads=KV_HEADS,
                     vocab_size=VOCAB, hidden_dim=HIDDEN, max_seq_len=context,
                     max_context_len=context, use_kv_cache=True, max_batch_size=1,
                     **(LORA if lora else {}))
    model = construct_transformer(args).eval()
    if quantized:
        from executorch.examples.models.llama.source_transformation.quantize import (
            get_quant_embedding_transform, get_quant_weight_transform)
        from torchao.utils import unwrap_tensor_subclass
        # As export_llama -E 8,0 -qmode 8da4w -G 32 does: embeddings first.
        model = get_quant_embedding_transform("8,0")(model)
        model = get_quant_weight_transform("8da4w", group_size=32)(model)
        # torchao's weights are tensor subclasses; exported as they are, the
        # placeholders that run_decompositions makes of them lose the tag
        # delegate_external_constants_pass_unlifted puts on them, and
        # XNNPACK's weights would stay in the .pte. Plain parameters keep it.
        model = unwrap_tensor_subclass(model)
    return model


def llama_inputs(token=1, pos=0):
    return [torch.tensor([[token]], dtype=torch.long), torch.tensor([pos], dtype=torch.long)]


def export_llama(context, quantized, tag=None, lora=False):
    """The lowered EdgeProgramManager and the ExecutorchBackendConfig to use;
    with `tag`, every constant and XNNPACK weight goes to `{tag}.ptd`; with
    `lora` too, only the foundation's: the adapter's stay in the .pte."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir.passes.external_constants_pass import (
        delegate_external_constants_pass_unlifted)
    model = llama_model(context, quantized, lora)
    tokens, pos = llama_inputs()
    example = (tokens, {"input_pos": pos})
    ep = torch.export.export(model, example, strict=False)
    config = None
    if tag is not None:
        # Upstream's recipe: tag the unlifted module's weights, export again.
        # export_llama's rule for its foundation and LoRA files: by node name.
        def gen_tag(node):
            return None if lora and "lora" in node.name else tag
        module = ep.module()
        delegate_external_constants_pass_unlifted(module=module, gen_tag_fn=gen_tag)
        ep = torch.export.export(module, example, strict=False)
        config = ExecutorchBackendConfig(external_constants=gen_tag)
    return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]), config


def write_program(et, directory, name):
    directory.mkdir(parents=True, exist_ok=True)
    pte = directory / f"{name}.pte"
    with open(pte, "wb") as f:
        et.write_to_file(f)
    et.write_tensor_data_to_file(str(directory))
    ptds = sorted(p for p in directory.glob("*.ptd"))
    return Files(pte, ptds)


def to_executorch_both(edge, config=None):
    """(upstream's ExecutorchProgramManager, etpack's) of one lowered export.

    to_executorch() runs its passes on the edge programs in place (a second
    call on the same manager fails), so each run gets its own copy."""
    upstream = copy.deepcopy(edge).to_executorch(copy.deepcopy(config))
    with pytest.MonkeyPatch.context() as mp:
        # Recorded so that leaving the block puts upstream's serializer back.
        mp.setattr(_program, "serialize_for_executorch", _program.serialize_for_executorch)
        import etpack.exir
        assert etpack.exir.install()
        assert _program.serialize_for_executorch is etpack.exir.serialize_for_executorch
        ours = copy.deepcopy(edge).to_executorch(copy.deepcopy(config))
    assert _program.serialize_for_executorch is not etpack.exir.serialize_for_executorch
    return upstream, ours


def write_both(edge, root, name, calls, config=None, llama=False):
    upstream, ours = to_executorch_both(edge, config)
    return Case(name, write_program(upstream, root / name / "upstream", name),
                write_program(ours, root / name / "etpack", name), calls, llama)


# --- small programs -------------------------------------------------------

class Counter(torch.nn.Module):
    """Mutable buffers, not delegated: a running sum and a step count that
    forward updates in place."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.register_buffer("total", torch.zeros(16))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.long))

    def forward(self, x):
        self.total.add_(self.linear(x).sum(0))
        self.steps.add_(1)
        return self.total * 2, self.steps + 0


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 32)

    def forward(self, x):
        return torch.tanh(self.proj(x))


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 8)
        self.scale = torch.nn.Parameter(torch.randn(8))

    def forward(self, h, bias):
        return self.proj(h) * self.scale + bias


def export_mutable():
    torch.manual_seed(SEED)
    x = torch.randn(3, 16)
    ep = torch.export.export(Counter().eval(), (x,), strict=False)
    calls = {"forward": [[torch.randn(3, 16)] for _ in range(3)]}
    return to_edge(ep), calls


def export_two_methods():
    torch.manual_seed(SEED)
    enc, dec = Encoder().eval(), Decoder().eval()
    x, h = torch.randn(2, 8), torch.randn(2, 32)
    eps = {"encode": torch.export.export(enc, (x,), strict=False),
           "decode": torch.export.export(dec, (h, torch.randn(8)), strict=False)}
    calls = {"encode": [[torch.randn(2, 8)]], "decode": [[torch.randn(2, 32), torch.randn(8)]]}
    return to_edge(eps), calls
