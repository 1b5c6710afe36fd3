// etpack/npy.h — NumPy .npy files as tensor sources.
//
// Reads only the header: the array's bytes stay in the file and come back
// as a file-range source, so a test tensor of any size costs no memory.
//
// Accepted files (the format numpy.save writes):
//   "\x93NUMPY", major, minor (1.0, 2.0 or 3.0), header length (u16 LE for
//   1.0, u32 LE otherwise), then the header: a Python dict literal
//     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   with exactly these three keys, padded with spaces and a newline; the
//   array's bytes follow immediately. Bytes after the array are ignored, as
//   numpy ignores them.
//
// descr -> ExecuTorch ScalarType:
//   <f2 HALF   <f4 FLOAT   <f8 DOUBLE
//   |i1 CHAR   <i2 SHORT   <i4 INT     <i8 LONG
//   |u1 BYTE   <u2 UINT16  <u4 UINT32  <u8 UINT64
//   |b1 BOOL
// One-byte types may carry any byte-order mark ('|', '<', '>', '='). Big-
// endian multi-byte data, object arrays, structured dtypes and every other
// descr are errors naming the file and the descr.
//
// Fortran order is handled exactly and without copying: the bytes of a
// column-major array are a contiguous tensor whose dimensions run from the
// last (outermost in memory) to the first, i.e. sizes as written and
// dim_order [rank-1, ..., 1, 0]. C order gives the identity dim_order.

#ifndef ETPACK_NPY_H_
#define ETPACK_NPY_H_

#include <cstdint>
#include <string>

#include "etpack/env.h"
#include "etpack/ptd.h"  // TensorLayout
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Headers longer than this are refused (a hostile or corrupt file).
inline constexpr uint64_t kMaxNpyHeader = uint64_t{1} << 20;

struct NpyArray {
  TensorLayout layout;  // scalar type, shape (each dim fits int32), dim_order
  SourcePtr data;       // exactly LayoutNbytes(layout) bytes of the file
  std::string descr;    // as written, e.g. "<f4"
};

// The ScalarType code for a .npy descr, or -1 when etpack does not map it
// (big-endian, unknown, object, structured).
int ScalarTypeForNpyDescr(const std::string& descr);

// Reads and validates `path`'s header. Errors name the file and the
// offending field or value: bad magic, a header longer
// than kMaxNpyHeader or past the end of the file, a malformed dict literal,
// missing/unknown/duplicate keys, or data shorter than the shape needs
// (expected and actual byte counts): kCorrupt. An unsupported version or
// descr is kUnimplemented; a shape the format cannot hold is refused as every layout
// is (etpack/tensor_layout.h: kOutOfRange for a dimension above INT32_MAX,
// kInvalidArgument for a rank above kMaxTensorRank or a byte count beyond
// 64 bits). kNotFound for a missing file.
// The file is opened through `env.input` (etpack/env.h).
Result<NpyArray> ReadNpy(const std::string& path, const Env& env = {});

}  // namespace etpack

#endif  // ETPACK_NPY_H_
