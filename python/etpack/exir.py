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
    is the store's keyword in older upstream code."""
    del data_serializer
    if named_data_store is None:
        named_data_store = named_data
    pte, ptds = _etpack._exir_for_executorch(emitter_output, named_data_store,
                                             *_options(config))
    return pte, dict(ptds)


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
