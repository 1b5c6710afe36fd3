#include "etpack/bundle_cases.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base64.h"
#include "core/json_document.h"
#include "etpack/json.h"
#include "etpack/npy.h"
#include "etpack/ptd.h"
#include "etpack/source.h"
#include "import/json_layout.h"

namespace etpack {
namespace {

Result<TensorLayout> GetLayout(const JsonDocument& cx, const json::Value& t,
                               const std::string& path) {
  const json::Value* dtype = t.Find("dtype");
  if (dtype == nullptr) return cx.Error(path, "tensor has no \"dtype\"");
  ETPACK_ASSIGN_OR_RETURN(const int scalar_type,
                          JsonScalarType(cx, *dtype, MemberPath(path, "dtype")));
  const json::Value* sizes = t.Find("sizes");
  if (sizes == nullptr) return cx.Error(path, "tensor has no \"sizes\" ([] for a scalar)");
  return JsonLayout(cx, scalar_type, *sizes, t.Find("dim_order"), path);
}

Result<BundledValue> GetTensor(const JsonDocument& cx, const json::Value& t,
                               const std::string& path) {
  BundledValue out;
  out.kind = BundledValue::Kind::kTensor;
  if (t.kind() != json::Kind::kObject) return cx.BadValue(path, t, "is not an object");

  if (const json::Value* npy = t.Find("npy")) {
    // Everything comes from the file; a second description could disagree.
    ETPACK_RETURN_IF_ERROR(cx.CheckMembers(t, path, {"npy"}));
    const std::string npy_path = MemberPath(path, "npy");
    if (npy->kind() != json::Kind::kString || npy->as_string().empty()) {
      return cx.BadValue(npy_path, *npy, "is not a file name");
    }
    Result<NpyArray> array = ReadNpy(cx.Resolve(npy->as_string()), Env{&cx.fs(), nullptr});
    if (!array.ok()) return cx.Wrap(npy_path, array.status());
    out.layout = std::move(array->layout);
    out.data = std::move(array->data);
    return out;
  }

  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(
      t, path, {"dtype", "sizes", "dim_order", "file", "offset", "length", "base64"}));
  ETPACK_ASSIGN_OR_RETURN(out.layout, GetLayout(cx, t, path));
  ETPACK_ASSIGN_OR_RETURN(const uint64_t nbytes, LayoutNbytes(out.layout, cx.Where(path)));

  const json::Value* file = t.Find("file");
  const json::Value* b64 = t.Find("base64");
  if ((file == nullptr) == (b64 == nullptr)) {
    return cx.Error(path,
                    "a tensor takes its data from exactly one of \"npy\", \"file\" or "
                    "\"base64\"");
  }
  std::string origin;  // where the bytes came from, for the size message
  if (b64 != nullptr) {
    if (t.Find("offset") != nullptr || t.Find("length") != nullptr) {
      return cx.Error(path, "\"offset\" and \"length\" apply to \"file\", not \"base64\"");
    }
    const std::string b64_path = MemberPath(path, "base64");
    if (b64->kind() != json::Kind::kString) return cx.BadValue(b64_path, *b64, "is not a string");
    std::vector<uint8_t> bytes;
    std::string why;
    if (!DecodeBase64(b64->as_string(), &bytes, &why)) {
      return cx.BadValue(b64_path, *b64, "is not base64: " + why);
    }
    origin = "base64 decodes to " + std::to_string(bytes.size()) + " bytes";
    out.data = OwnedSource(std::move(bytes));
  } else {
    ETPACK_ASSIGN_OR_RETURN(out.data, cx.FileRange(t, path));
    const bool to_end = t.Find("length") == nullptr || t.Find("length")->is_null();
    origin = "file " + QuotedText(file->as_string()) + " has " + std::to_string(out.data->size()) +
             " bytes from offset " + std::to_string(out.data->file_range()->offset) +
             (to_end ? " to its end" : "");
    if (to_end && out.data->size() > nbytes) {
      origin += "; give \"length\" to take only part of it";
    }
  }
  if (out.data->size() != nbytes) {
    return cx.Error(path, DescribeLayout(out.layout) + " needs " + std::to_string(nbytes) +
                              " bytes, but " + origin);
  }
  return out;
}

Result<BundledValue> GetValue(const JsonDocument& cx, const json::Value& v,
                              const std::string& path) {
  if (v.kind() != json::Kind::kObject || v.members().size() != 1) {
    return cx.BadValue(path, v,
                       "is not a value: expected an object with exactly one of \"int\", "
                       "\"bool\", \"double\", \"tensor\"");
  }
  const auto& [kind, x] = v.members()[0];
  const std::string x_path = MemberPath(path, kind);
  BundledValue out;
  if (kind == "int") {
    out.kind = BundledValue::Kind::kInt;
    if (x.kind() != json::Kind::kInt)
      return cx.BadValue(x_path, x, "is not a 64-bit signed integer");
    out.int_val = x.as_int();
    return out;
  }
  if (kind == "bool") {
    out.kind = BundledValue::Kind::kBool;
    if (x.kind() != json::Kind::kBool) return cx.BadValue(x_path, x, "is not true or false");
    out.bool_val = x.as_bool();
    return out;
  }
  if (kind == "double") {
    out.kind = BundledValue::Kind::kDouble;
    if (x.is_number()) {
      out.double_val = x.as_double();
      return out;
    }
    if (x.kind() == json::Kind::kString) {
      const std::string& s = x.as_string();
      const double inf = std::numeric_limits<double>::infinity();
      if (s == "inf" || s == "-inf" || s == "nan") {
        out.double_val = s == "inf" ? inf : s == "-inf" ? -inf : std::nan("");
        return out;
      }
    }
    return cx.BadValue(x_path, x, "is not a number or one of \"inf\", \"-inf\", \"nan\"");
  }
  if (kind == "tensor") return GetTensor(cx, x, x_path);
  return cx.Error(path, "unknown value kind " + QuotedText(kind) +
                            " (expected one of: int, bool, double, tensor)");
}

Status GetValues(const JsonDocument& cx, const json::Value& arr, const std::string& path,
                 std::vector<BundledValue>* out) {
  if (arr.kind() != json::Kind::kArray) return cx.BadValue(path, arr, "is not an array");
  out->reserve(arr.items().size());
  for (size_t i = 0; i < arr.items().size(); ++i) {
    ETPACK_ASSIGN_OR_RETURN(BundledValue v, GetValue(cx, arr.items()[i], IndexPath(path, i)));
    out->push_back(std::move(v));
  }
  return Status::OK();
}

Result<BundledTestCase> GetCase(const JsonDocument& cx, const json::Value& c,
                                const std::string& path) {
  if (c.kind() != json::Kind::kObject) return cx.BadValue(path, c, "is not an object");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(c, path, {"inputs", "expected_outputs"}));
  BundledTestCase out;
  const json::Value* inputs = c.Find("inputs");
  if (inputs == nullptr) return cx.Error(path, "test case has no \"inputs\"");
  ETPACK_RETURN_IF_ERROR(GetValues(cx, *inputs, MemberPath(path, "inputs"), &out.inputs));
  const json::Value* outputs = c.Find("expected_outputs");
  if (outputs != nullptr && !outputs->is_null()) {
    ETPACK_RETURN_IF_ERROR(
        GetValues(cx, *outputs, MemberPath(path, "expected_outputs"), &out.expected_outputs));
  }
  return out;
}

}  // namespace

Result<std::vector<BundledTestSuite>> LoadBundleCases(const std::string& path, SourcePtr* file,
                                                      const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(const json::Value doc, json::ParseFile(env.in(), path, file));
  const size_t slash = path.rfind('/');
  const JsonDocument cx(
      path, slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash), env.in());

  if (doc.kind() != json::Kind::kObject) return cx.BadValue("", doc, "is not a JSON object");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(doc, "", {"methods"}));
  const json::Value* methods = doc.Find("methods");
  if (methods == nullptr) return cx.Error("", "no \"methods\" object (method name -> test cases)");
  if (methods->kind() != json::Kind::kObject) {
    return cx.BadValue("methods", *methods, "is not an object (method name -> test cases)");
  }
  if (methods->members().empty()) {
    return cx.Error("methods", "no methods: give at least one method with test cases");
  }

  std::vector<BundledTestSuite> suites;
  suites.reserve(methods->members().size());
  for (const auto& [name, cases] : methods->members()) {
    const std::string suite_path = MemberPath("methods", name);
    if (name.empty()) return cx.Error("methods", "a method name is empty");
    if (cases.kind() != json::Kind::kArray) {
      return cx.BadValue(suite_path, cases, "is not an array of test cases");
    }
    BundledTestSuite suite;
    suite.method_name = name;
    suite.test_cases.reserve(cases.items().size());
    for (size_t i = 0; i < cases.items().size(); ++i) {
      ETPACK_ASSIGN_OR_RETURN(BundledTestCase c,
                              GetCase(cx, cases.items()[i], IndexPath(suite_path, i)));
      suite.test_cases.push_back(std::move(c));
    }
    suites.push_back(std::move(suite));
  }
  return suites;
}

}  // namespace etpack
