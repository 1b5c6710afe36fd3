// etpack/bundle_cases.h — test cases for `etpack bundle`, read from JSON.
//
// A CASES.json (docs/bundle-cases.md) lists, per method, test cases with
// inputs and expected outputs:
//
//   {"methods": {
//      "forward": [
//        {"inputs": [{"tensor": {"npy": "x.npy"}}, {"int": 3}],
//         "expected_outputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2],
//                                          "base64": "AACAPwAAAEA="}}]}
//      ]}}
//
// A value is exactly one of {"int": N}, {"bool": B}, {"double": D} (D may be
// the string "inf", "-inf" or "nan"), or {"tensor": T}, T being one of
//   {"npy": PATH}                                    dtype, shape, order from the file
//   {"dtype": D, "sizes": [..], "dim_order": [..]?,  a byte range of a raw file;
//    "file": PATH, "offset": N?, "length": N?}        length defaults to the rest of it
//   {"dtype": D, "sizes": [..], "dim_order": [..]?,  small inline data
//    "base64": "..."}
// D is a ScalarType name ("FLOAT", "BFLOAT16", ...; case-sensitive) or code.
// Relative paths resolve against the folder of the CASES.json.
//
// Only headers are read: tensor data stays in its files (or, for base64,
// in memory) and comes back as sources of exactly the tensor's byte size.

#ifndef ETPACK_BUNDLE_CASES_H_
#define ETPACK_BUNDLE_CASES_H_

#include <string>
#include <vector>

#include "etpack/bpte.h"
#include "etpack/env.h"
#include "etpack/status.h"

namespace etpack {

// Reads `path`. Suites come back in the order the methods are written, test
// cases and values in file order. Errors (kInvalidArgument; kNotFound for a
// missing data file) name the file, the JSON path of the offending value
// (e.g. "methods.forward[1].inputs[0].tensor.sizes") and the value: unknown
// members or value kinds, a bad dtype, sizes or dim_order, a data source
// whose byte count differs from dtype x sizes (both counts given), an
// unreadable or malformed .npy file. `file`, when given, receives the
// CASES.json read, for BpteInput::read. The case file and every data file
// it names are opened through `env.input` (etpack/env.h).
Result<std::vector<BundledTestSuite>> LoadBundleCases(const std::string& path,
                                                      SourcePtr* file = nullptr,
                                                      const Env& env = {});

}  // namespace etpack

#endif  // ETPACK_BUNDLE_CASES_H_
