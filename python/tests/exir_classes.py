"""Small stand-ins for the objects ExecuTorch's exporter holds when it
serializes (docs/python.md, "Using etpack from ExecuTorch's exporter"):
dataclasses and IntEnums carrying the attribute names of the format (the
schema's field names), so tests and the benchmark can hand etpack.exir the
tree an exporter would, without ExecuTorch. Written for these tests; no
upstream code.

from_flatc() builds such a tree from a golden input (flatc form: unions as
"<field>_type" + "<field>", blobs as {"base64", "size"})."""

import base64
import dataclasses
import enum
import typing
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union


class ScalarType(enum.IntEnum):
    BYTE = 0
    CHAR = 1
    SHORT = 2
    INT = 3
    LONG = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    QUINT4X2 = 16
    QUINT2X4 = 17
    BITS16 = 22
    FLOAT8E5M2 = 23
    FLOAT8E4M3FN = 24
    FLOAT8E5M2FNUZ = 25
    FLOAT8E4M3FNUZ = 26
    UINT16 = 27
    UINT32 = 28
    UINT64 = 29


class TensorShapeDynamism(enum.IntEnum):
    STATIC = 0
    DYNAMIC_BOUND = 1
    DYNAMIC_UNBOUND = 2


class TensorDataLocation(enum.IntEnum):
    SEGMENT = 0
    EXTERNAL = 1


class DeviceType(enum.IntEnum):
    CPU = 0
    CUDA = 1


class DataLocation(enum.IntEnum):
    INLINE = 0
    SEGMENT = 1


@dataclass
class AllocationDetails:
    memory_id: int
    memory_offset_low: int
    memory_offset_high: int


@dataclass
class ExtraTensorInfo:
    mutable_data_segments_idx: int = 0
    fully_qualified_name: Optional[str] = None
    location: TensorDataLocation = TensorDataLocation.SEGMENT
    device_type: DeviceType = DeviceType.CPU
    device_index: int = 0


@dataclass
class Tensor:
    scalar_type: ScalarType
    storage_offset: int
    sizes: List[int]
    dim_order: List[int]
    requires_grad: bool
    layout: int
    data_buffer_idx: int
    allocation_info: Optional[AllocationDetails]
    shape_dynamism: TensorShapeDynamism = TensorShapeDynamism.STATIC
    extra_tensor_info: Optional[ExtraTensorInfo] = None


@dataclass
class Null:
    pass


@dataclass
class Int:
    int_val: int


@dataclass
class Bool:
    bool_val: bool


@dataclass
class Double:
    double_val: Union[float, str]


@dataclass
class String:
    string_val: str


@dataclass
class IntList:
    items: List[int]


@dataclass
class DoubleList:
    items: List[float]


@dataclass
class BoolList:
    items: List[bool]


@dataclass
class TensorList:
    items: List[int]


@dataclass
class OptionalTensorList:
    items: List[int]


KernelTypes = Union[Null, Int, Bool, Double, Tensor, String, IntList, DoubleList, BoolList,
                    TensorList, OptionalTensorList]


@dataclass
class EValue:
    val: KernelTypes


@dataclass
class Operator:
    name: str
    overload: str


@dataclass
class KernelCall:
    op_index: int
    args: List[int]


@dataclass
class DelegateCall:
    delegate_index: int
    args: List[int]


@dataclass
class MoveCall:
    move_from: int
    move_to: int


@dataclass
class JumpFalseCall:
    cond_value_index: int
    destination_instruction: int


@dataclass
class FreeCall:
    value_index: int


InstructionArguments = Union[KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall]


@dataclass
class Instruction:
    instr_args: InstructionArguments


@dataclass
class Frame:
    filename: str
    lineno: int
    name: str
    context: str


@dataclass
class FrameList:
    items: List[Frame]


@dataclass
class Chain:
    inputs: List[int]
    outputs: List[int]
    instructions: List[Instruction]
    stacktrace: Optional[List[FrameList]]


@dataclass
class BackendDelegateDataReference:
    location: DataLocation
    index: int


@dataclass
class CompileSpec:
    key: str
    value: bytes


@dataclass
class BackendDelegate:
    id: str
    processed: BackendDelegateDataReference
    compile_specs: List[CompileSpec]


@dataclass
class ContainerMetadata:
    encoded_inp_str: str
    encoded_out_str: str


@dataclass
class NonConstBufferDevice:
    buffer_idx: int
    device_type: DeviceType = DeviceType.CPU
    device_index: int = 0


@dataclass
class ExecutionPlan:
    name: str
    container_meta_type: ContainerMetadata
    values: List[EValue]
    inputs: List[int]
    outputs: List[int]
    chains: List[Chain]
    operators: List[Operator]
    delegates: List[BackendDelegate]
    non_const_buffer_sizes: List[int]
    non_const_buffer_device: Optional[List[NonConstBufferDevice]] = None


@dataclass
class Buffer:
    storage: bytes


@dataclass
class BackendDelegateInlineData:
    data: bytes


@dataclass
class DataSegment:
    offset: int
    size: int


@dataclass
class SubsegmentOffsets:
    segment_index: int
    offsets: List[int]


@dataclass
class NamedData:
    key: str
    segment_index: int


@dataclass
class Program:
    version: int
    execution_plan: List[ExecutionPlan]
    constant_buffer: List[Buffer]
    backend_delegate_data: List[BackendDelegateInlineData]
    segments: List[DataSegment]
    constant_segment: SubsegmentOffsets
    mutable_data_segments: Optional[List[SubsegmentOffsets]] = None
    named_data: Optional[List[NamedData]] = None


# Around the program.

@dataclass
class TensorLayout:
    scalar_type: ScalarType
    sizes: List[int]
    dim_order: List[int]


@dataclass
class DataEntry:
    buffer_index: int
    alignment: int
    tensor_layout: Optional[TensorLayout] = None


@dataclass
class NamedDataStoreOutput:
    buffers: List[bytes] = field(default_factory=list)
    pte_data: Dict[str, DataEntry] = field(default_factory=dict)
    external_data: Dict[str, Dict[str, DataEntry]] = field(default_factory=dict)


@dataclass
class PTEFile:
    program: Program
    mutable_data: Optional[List[Buffer]] = None
    named_data: Optional[NamedDataStoreOutput] = None


@dataclass
class DataPayload:
    buffers: List[bytes]
    named_data: Dict[str, DataEntry]


@dataclass
class EmitterOutput:
    program: Program
    mutable_data: Optional[List[Buffer]] = None
    external_constant_buffer: List[bytes] = field(default_factory=list)
    external_constant_map: Dict[str, Dict[str, int]] = field(default_factory=dict)


@dataclass
class ExecutorchBackendConfig:
    extract_delegate_segments: bool = True
    segment_alignment: int = 128
    constant_tensor_alignment: Optional[int] = None
    delegate_alignment: Optional[int] = None


class FileBackedData:
    """Data that stays in a file: no buffer protocol, its path in `_path`."""

    def __init__(self, path):
        self._path = str(path)

    def __len__(self):
        import os
        return os.path.getsize(self._path)


# flatc-form dicts (golden inputs) to these classes.

_CLASSES = {c.__name__: c for c in (
    Null, Int, Bool, Double, String, IntList, DoubleList, BoolList, TensorList,
    OptionalTensorList, Tensor, KernelCall, DelegateCall, MoveCall, JumpFalseCall, FreeCall)}


def blob(b):
    return base64.b64decode(b["base64"])


def _convert(hint, value):
    if value is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _convert(members[0], value)
        if float in members:  # Double.double_val: a float or "inf"/"-inf"
            return value if isinstance(value, str) else float(value)
        raise AssertionError("unions are converted by their _type sibling")
    if origin in (list, List):
        return [_convert(args[0], v) for v in value]
    if hint is bytes:
        return blob(value)
    if isinstance(hint, type) and issubclass(hint, enum.IntEnum):
        return hint(value)
    if dataclasses.is_dataclass(hint):
        return from_flatc(hint, value)
    return value


def from_flatc(cls, d):
    """An instance of dataclass `cls` from its flatc-form dict."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        value = d.get(f.name)
        if f.name + "_type" in d:
            member = _CLASSES[d[f.name + "_type"]]
            kwargs[f.name] = from_flatc(member, value or {})
        else:
            kwargs[f.name] = _convert(hints[f.name], value)
    return cls(**kwargs)
