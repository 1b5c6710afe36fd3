"""etpack.exir: ExecuTorch's serialization entry points, streamed.

The functions take the objects ExecuTorch's exporter (``exir``) holds when it
serializes, by duck typing: they read the attributes upstream's classes have
(``Program`` and its tables, ``PTEFile``, ``NamedDataStoreOutput``,
``DataPayload``, ``EmitterOutput``, ``ExecutorchBackendConfig``). The program
tree is read in C++ straight into the planner (no JSON, no dict); bytes are
borrowed through the buffer protocol and file-backed data is copied file to
file, never into new Python objects.

Each function returns an :class:`Artifact`, planned but not written:
``len(a)``, ``a.write_to_file(f)`` (streams into an open binary file at its
position), ``bytes(a)``, ``a.save(path)`` (atomic). The output equals
upstream's serializer's byte for byte.

This module imports neither executorch nor torch; :func:`install` makes an
importable executorch use it.
"""

import os

from . import _etpack

Artifact = _etpack.Artifact

__all__ = ["Artifact", "serialize_pte_binary", "serialize_ptd", "serialize_for_executorch",
           "save", "install"]


def serialize_pte_binary(pte_file, *, extract_delegate_segments=False, segment_alignment=128,
                         constant_tensor_alignment=None, delegate_alignment=None,
                         mutable_data=None, named_data=None):
    """The .pte of ``pte_file`` (``program``, ``mutable_data``, ``named_data``),
    as upstream's function of the same name writes it. Older upstream code
    passes the ``Program`` itself with ``mutable_data=``/``named_data=``;
    that form is accepted too. ``constant_tensor_alignment=None`` means 16,
    ``delegate_alignment=None`` the schema's 16. Of ``named_data`` only
    ``pte_data`` is stored."""
    if hasattr(pte_file, "program") and not hasattr(pte_file, "execution_plan"):
        program = pte_file.program
        mutable_data = getattr(pte_file, "mutable_data", None)
        named_data = getattr(pte_file, "named_data", None)
        root = "pte_file"
    else:
        program, root = pte_file, "program"
    return _etpack._exir_pte(program, mutable_data, named_data, root,
                             bool(extract_delegate_segments), segment_alignment,
                             constant_tensor_alignment, delegate_alignment)


def serialize_ptd(data_payload, *, segment_alignment=128):
    """The .ptd of ``data_payload`` (``buffers``, ``named_data``: key -> entry
    with ``buffer_index``, ``alignment``, ``tensor_layout``), as upstream's
    ``FlatTensorSerializer(FlatTensorConfig(segment_alignment)).serialize``."""
    return _etpack._exir_ptd(data_payload, segment_alignment)


def _options(config):
    if config is None:  # upstream's ExecutorchBackendConfig defaults
        return True, 128, None, None
    return (bool(config.extract_delegate_segments), config.segment_alignment,
            config.constant_tensor_alignment, config.delegate_alignment)


def serialize_for_executorch(emitter_output, config, data_serializer=None,
                             named_data_store=None, *, named_data=None):
    """``(pte, {tag: ptd})`` as upstream's function of that name places the
    data: the .pte holds the program, the mutable data and the store's
    ``pte_data``; each tag's .ptd holds the emitter's external constants of
    that tag (keyed by fully qualified name, with their EXTERNAL tensor's
    layout) and the store's ``external_data`` of that tag. ``data_serializer``
    is accepted for the signature; the .ptd files are ExecuTorch's flat tensor
    format, segment-aligned as ``config.segment_alignment`` says. ``named_data``
    is the store's keyword in older upstream code.

    A ``data_serializer`` other than upstream's ``FlatTensorSerializer`` (or
    None) is honoured as upstream honours it: the .pte is etpack's, and each
    tag's data is handed to ``data_serializer.serialize`` as a ``DataPayload``
    (upstream's class) whose result is returned as it is."""
    if named_data_store is None:
        named_data_store = named_data
    if not _is_flat_tensor(data_serializer):
        return _with_serializer(emitter_output, config, data_serializer, named_data_store)
    pte, ptds = _etpack._exir_for_executorch(emitter_output, named_data_store,
                                             *_options(config))
    return pte, dict(ptds)


def _is_flat_tensor(data_serializer):
    return data_serializer is None or type(data_serializer).__name__ == "FlatTensorSerializer"


class _PteFile:
    def __init__(self, program, mutable_data, named_data):
        self.program, self.mutable_data, self.named_data = program, mutable_data, named_data


def _with_serializer(emitter_output, config, data_serializer, store):
    extract, segment, constant, delegate = _options(config)
    pte = serialize_pte_binary(
        _PteFile(emitter_output.program, emitter_output.mutable_data, store),
        extract_delegate_segments=extract, segment_alignment=segment,
        constant_tensor_alignment=constant, delegate_alignment=delegate)
    external = store.external_data if store is not None else {}
    constant_map = emitter_output.external_constant_map or {}
    if not constant_map and not external:
        return pte, {}
    # The serializer's own package has the payload classes (no executorch
    # import unless a caller brought one of its serializers).
    from executorch.exir._serialize.data_serializer import DataEntry, DataPayload
    if not constant_map:
        return pte, {tag: data_serializer.serialize(DataPayload(buffers=store.buffers,
                                                                named_data=entries))
                     for tag, entries in external.items()}
    buffers, index_of, tags = [], {}, {}

    def add(tag, key, data, alignment, layout):
        # Equal bytes share a buffer; file-backed data is compared by object.
        same = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else id(data)
        index = index_of.setdefault(same, len(buffers))
        if index == len(buffers):
            buffers.append(data)
        tags.setdefault(tag, {})[key] = DataEntry(buffer_index=index, alignment=alignment,
                                                  tensor_layout=layout)

    layouts = _external_layouts(emitter_output.program)
    for tag, fqns in constant_map.items():
        for fqn, i in fqns.items():
            add(tag, fqn, emitter_output.external_constant_buffer[i], 1, layouts.get(fqn))
    for tag, entries in external.items():
        for key, e in entries.items():
            add(tag, key, store.buffers[e.buffer_index], e.alignment, e.tensor_layout)
    return pte, {tag: data_serializer.serialize(DataPayload(buffers=buffers, named_data=entries))
                 for tag, entries in tags.items()}


def _external_layouts(program):
    """fqn -> TensorLayout of the program's EXTERNAL tensors."""
    from executorch.exir.tensor_layout import TensorLayout
    out = {}
    for plan in program.execution_plan:
        for value in plan.values:
            t = value.val
            info = getattr(t, "extra_tensor_info", None)
            if info is not None and info.fully_qualified_name is not None and int(info.location) == 1:
                out[info.fully_qualified_name] = TensorLayout(t.scalar_type, t.sizes, t.dim_order)
    return out


def save(pte_path, emitter_output, *, config=None, named_data_store=None, ptd_dir=None,
         max_shard_bytes=None):
    """Writes the .pte to ``pte_path`` and each tag's data to
    ``{ptd_dir}/{tag}.ptd`` (``.ptd`` not doubled; ``ptd_dir`` defaults to the
    .pte's directory) as one unit: all files appear, or none and every
    destination is left as it was. With ``max_shard_bytes``, each tag's data
    is shards of at most that many bytes, ``{tag}-<16 hex>.ptd``. Returns the
    .ptd paths written."""
    from . import _max_shard_bytes  # the package's check of the value
    if ptd_dir is None:
        ptd_dir = os.path.dirname(os.fspath(pte_path)) or "."
    return _etpack._exir_save(pte_path, emitter_output, named_data_store, ptd_dir,
                              *_options(config), _max_shard_bytes(max_shard_bytes))


def install():
    """Makes an importable executorch's ``to_executorch()`` serialize with
    etpack: replaces the ``serialize_for_executorch`` that
    ``executorch.exir.program._program`` calls. Returns True when executorch
    now uses etpack, False when there is no executorch (or no such name) to
    patch."""
    try:
        import importlib
        program = importlib.import_module("executorch.exir.program._program")
    except ImportError:
        return False
    if not hasattr(program, "serialize_for_executorch"):
        return False
    program.serialize_for_executorch = serialize_for_executorch
    return True
