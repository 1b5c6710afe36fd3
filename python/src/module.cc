// etpack._etpack — the C++ half of the Python module. etpack/__init__.py
// holds the public functions; it turns arrays and tensors into buffers and
// layouts and calls the private functions here, which call the library.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "etpack/artifact_kind.h"
#include "etpack/bpte.h"
#include "etpack/bundle_cases.h"
#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/plan.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/share.h"
#include "etpack/update.h"
#include "etpack/verify.h"
#include "exir.h"
#include "items.h"
#include "write.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

// The items of a tuple etpack/__init__.py built, `n` of them, each a value
// the caller gave.
py::tuple TupleOf(py::handle t, size_t n, const std::string& what) {
  if (!PyTuple_Check(t.ptr()) || static_cast<size_t>(PyTuple_GET_SIZE(t.ptr())) != n) {
    RaiseTypeError(what + ": expected a tuple of " + std::to_string(n) + ", not " +
                   std::string(py::repr(t)));
  }
  return py::reinterpret_borrow<py::tuple>(t);
}

// (scalar_type, sizes, dim_order) from etpack/__init__.py: a dtype code and
// lists of the caller's values (Entry(dtype=, sizes=, dim_order=)), each
// an int with its name; the format's ranges are the library's to check.
TensorLayout LayoutOf(py::handle layout, const std::string& what) {
  const py::tuple t = TupleOf(layout, 3, what + " layout");
  const int scalar_type = static_cast<int>(IntIn(t[0], what + ".dtype", INT32_MIN, INT32_MAX));
  std::vector<int64_t> sizes, dim_order;
  for (py::handle s : t[1]) {
    sizes.push_back(
        IntIn(s, what + ".sizes[" + std::to_string(sizes.size()) + "]", INT64_MIN, INT64_MAX));
  }
  for (py::handle d : t[2]) {
    dim_order.push_back(IntIn(d, what + ".dim_order[" + std::to_string(dim_order.size()) + "]",
                              INT64_MIN, INT64_MAX));
  }
  TensorLayout l = Take(LayoutOfInts(scalar_type, sizes, dim_order, what));
  Check(LayoutNbytes(l, what).status());
  return l;
}

std::vector<SourcePtr> SourceList(Items& items, py::handle list, const std::string& what) {
  std::vector<SourcePtr> sources;
  size_t i = 0;
  for (py::handle item : list) {
    sources.push_back(items.Source(item, what + "[" + std::to_string(i++) + "]"));
  }
  return sources;
}

ProgramStructure ProgramOf(Items& items, py::handle program) {
  if (PyUnicode_Check(program.ptr())) {
    return ProgramStructure::FromTree(Take(json::Parse(Utf8Of(program, "program"), "program")));
  }
  if (PyDict_Check(program.ptr())) return ProgramStructure::FromTree(JsonTree(program));
  if (PyObject_CheckBuffer(program.ptr())) {
    return ProgramStructure::FromFlatbuffer(items.Source(program, "program"));
  }
  RaiseTypeError("program must be flatc JSON (a str or a dict) or Program flatbuffer bytes, not " +
                 std::string(py::str(py::type::handle_of(program).attr("__name__"))));
}

py::list SavePte(const std::string& path, py::handle program, py::handle constants,
                 py::handle mutable_data, py::handle delegates, py::handle named_data,
                 const PteOptions& options, py::handle progress, py::handle external_constants,
                 uint64_t max_shard_bytes) {
  Items items;
  PteInput input;
  input.program = ProgramOf(items, program);
  input.constants = SourceList(items, constants, "constants");
  input.mutable_data = SourceList(items, mutable_data, "mutable");
  input.delegates = SourceList(items, delegates, "delegates");
  for (py::handle entry : named_data) {
    auto [name, item, alignment] = entry.cast<std::tuple<py::object, py::object, uint64_t>>();
    const std::string key = Utf8Of(name, "named_data key");
    Check(CheckDataKey(key, "named_data"));
    input.named_data.push_back({key, items.Source(item, "named_data['" + key + "']"), alignment});
  }
  std::string ptd_path;
  if (!external_constants.is_none()) ptd_path = PathOf(external_constants, "external_constants");

  ProgramWithDataPlan plan;
  PlanAndWrite(
      [&](ArtifactFiles* files) -> Status {
        std::vector<ExternalDataFile> data;
        if (!ptd_path.empty()) {
          ETPACK_ASSIGN_OR_RETURN(
              auto split,
              ExternalizeConstants(std::move(input), options.constant_tensor_alignment));
          input = std::move(split.first);
          data.push_back({ptd_path, std::move(split.second), max_shard_bytes});
        }
        ETPACK_ASSIGN_OR_RETURN(
            plan, PlanProgramWithData(path, std::move(input), options, std::move(data)));
        *files = plan.files();
        return Status::OK();
      },
      progress);
  py::list written;
  for (const ProgramWithDataPlan::Data& d : plan.data) written.append(PathObject(d.name));
  return written;
}

// The (key, item, alignment, layout) tuples of save_ptd and update as a
// .ptd input whose sources `items` holds.
PtdInput PtdInputOf(Items& items, py::handle entries) {
  PtdInput input;
  SourceIndex buffers(&input.buffers);
  // Sized once: a growing vector of many entries holds two copies of them
  // while it moves.
  const Py_ssize_t n = PyObject_LengthHint(entries.ptr(), 0);
  if (n < 0) throw py::error_already_set();
  input.entries.reserve(static_cast<size_t>(n));
  for (py::handle e : entries) {
    auto [name, item, alignment, layout] =
        e.cast<std::tuple<py::object, py::object, uint64_t, py::object>>();
    const std::string key = Utf8Of(name, "tensors key");
    Check(CheckDataKey(key, "tensors"));
    const std::string what = "tensors['" + key + "']";
    PtdEntry entry;
    entry.key = key;
    entry.buffer_index = buffers.Add(items.Source(item, what));
    entry.alignment = alignment;
    if (!layout.is_none()) entry.layout = LayoutOf(layout, what);
    input.entries.push_back(std::move(entry));
  }
  return input;
}

py::list SavePtd(const std::string& path, py::handle entries, uint64_t segment_alignment,
                 uint64_t max_shard_bytes, py::handle progress) {
  Items items;
  PtdInput input = PtdInputOf(items, entries);
  PtdOptions options;
  options.segment_alignment = segment_alignment;
  options.max_shard_bytes = max_shard_bytes;
  std::vector<PtdFilePlan> plans;
  PlanAndWrite(
      [&](ArtifactFiles* files) -> Status {
        Result<std::vector<PtdFilePlan>> planned = PlanPtdFiles(path, input, options);
        if (!planned.ok()) return planned.status().WithContext(path);
        plans = std::move(planned).value();
        *files = PtdFiles(plans);
        return Status::OK();
      },
      progress);
  py::list written;
  for (const PtdFilePlan& p : plans) written.append(PathObject(p.path));
  return written;
}

// etpack.update: the new weights are the files `paths` names, then the
// mapping's `entries`; the update runs with the GIL released, and Ctrl-C
// stops it while it waits for another update of the file and while it
// writes, as any write (nothing changes then). Returns the report as JSON
// text (UpdateReportJson).
std::string Update(const std::string& path, py::handle entries, py::handle paths,
                   py::handle progress) {
  Items items;
  PtdInput input = PtdInputOf(items, entries);
  const std::vector<std::string> files = PathsOf(paths, "tensors");
  return ReportText(
      [&](const WriteOptions& write) -> Result<json::Value> {
        Result<PtdInput> read = files.empty() ? Result<PtdInput>(PtdInput{}) : ReadWeights(files);
        if (!read.ok()) return read.status();
        PtdInput all = std::move(read).value();
        const auto base = static_cast<uint32_t>(all.buffers.size());
        for (PtdEntry& e : input.entries) {
          e.buffer_index += base;
          all.entries.push_back(std::move(e));
        }
        for (SourcePtr& b : input.buffers) all.buffers.push_back(std::move(b));
        ETPACK_ASSIGN_OR_RETURN(UpdateReport report, UpdateWeights(path, all, write));
        return UpdateReportJson(path, report);
      },
      progress);
}

// etpack.share: plans and, unless `dry_run`, writes with the GIL released
// (progress and Ctrl-C as every write); returns the report as JSON text
// (ShareReportJson).
std::string Share(py::handle inputs, const ShareOptions& options, bool dry_run,
                  py::handle progress) {
  const std::vector<std::string> paths = PathsOf(inputs, "inputs");
  return ReportText(
      [&](const WriteOptions& write) -> Result<json::Value> {
        ETPACK_ASSIGN_OR_RETURN(ShareResult done, etpack::Share(paths, options, dry_run, write));
        return ShareReportJson(done);
      },
      progress);
}

BundledValue ValueOf(Items& items, py::handle value, const std::string& what) {
  py::tuple t = value.cast<py::tuple>();
  const std::string kind = t[0].cast<std::string>();
  BundledValue v;
  if (kind == "int") {
    v.kind = BundledValue::Kind::kInt;
    v.int_val = IntIn(t[1], what, INT64_MIN, INT64_MAX);
  } else if (kind == "bool") {
    v.kind = BundledValue::Kind::kBool;
    v.bool_val = t[1].cast<bool>();
  } else if (kind == "double") {
    v.kind = BundledValue::Kind::kDouble;
    v.double_val = t[1].cast<double>();
  } else {
    v.kind = BundledValue::Kind::kTensor;
    v.data = items.Source(t[1], what);
    v.layout = LayoutOf(t[2], what);
  }
  return v;
}

// `cases`: a CASES.json path (the file read goes to `read`,
// BpteInput::read), or [(method, [(inputs, expected_outputs)])] with values
// as ValueOf reads them.
std::vector<BundledTestSuite> SuitesOf(Items& items, py::handle cases,
                                       std::vector<SourcePtr>* read) {
  if (IsPath(cases) || PyBytes_Check(cases.ptr())) {
    SourcePtr file;
    std::vector<BundledTestSuite> suites = Take(LoadBundleCases(PathOf(cases, "cases"), &file));
    read->push_back(std::move(file));
    return suites;
  }
  std::vector<BundledTestSuite> suites;
  for (py::handle s : cases) {
    BundledTestSuite suite;
    suite.method_name = Utf8Of(s.cast<py::tuple>()[0], "cases method name");
    size_t c = 0;
    for (py::handle test : s.cast<py::tuple>()[1]) {
      BundledTestCase tc;
      const std::string where = "cases['" + suite.method_name + "'][" + std::to_string(c++) + "]";
      size_t i = 0;
      for (py::handle in : test.cast<py::tuple>()[0]) {
        tc.inputs.push_back(ValueOf(items, in, where + ".inputs[" + std::to_string(i++) + "]"));
      }
      i = 0;
      for (py::handle out : test.cast<py::tuple>()[1]) {
        tc.expected_outputs.push_back(
            ValueOf(items, out, where + ".expected_outputs[" + std::to_string(i++) + "]"));
      }
      suite.test_cases.push_back(std::move(tc));
    }
    suites.push_back(std::move(suite));
  }
  return suites;
}

// The .pte to bundle, opened to check the cases against it: a file in
// place; bytes in place when 16-aligned (the reader's requirement), else
// through one copy.
Result<std::unique_ptr<PteFile>> OpenProgram(const SourcePtr& pte) {
  if (pte->file_range() != nullptr) return PteFile::Open("program_pte", pte);
  const uint8_t* data = pte->contiguous();
  if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
    return PteFile::FromMemory("program_pte", data, pte->size(), nullptr);
  }
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadAll(*pte, pte->size()));
  auto copy = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return PteFile::FromMemory("program_pte", copy->data(), copy->size(), copy);
}

void SaveBpte(const std::string& path, py::handle program, py::handle cases,
              const std::string& layout) {
  BpteOptions options;
  if (layout == "standard") {
    options.layout = BpteLayout::kStandard;
  } else if (layout == "segmented") {
    options.layout = BpteLayout::kSegmented;
  } else {
    Raise(Code::kInvalidArgument, "layout = '" + layout + "' is neither standard nor segmented");
  }
  Items items;
  SourcePtr pte = items.Source(program, "program_pte");
  BpteInput input;
  input.suites = SuitesOf(items, cases, &input.read);
  input.program = WholeSourcePlan(pte);
  BptePlan plan;
  PlanAndWrite(
      [&](ArtifactFiles* files) -> Status {
        ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PteFile> file, OpenProgram(pte));
        ETPACK_RETURN_IF_ERROR(CheckAgainstProgram(input.suites, *file));
        Result<BptePlan> planned = PlanBpte(input, options);
        if (!planned.ok()) return planned.status().WithContext(path);
        plan = std::move(planned).value();
        *files = {{path, &plan.artifact}};
        return Status::OK();
      },
      py::none());
}

// A read-only mapping of a whole file; the arrays load_ptd returns are views
// of it (through memoryviews, which keep it alive).
class Mapping {
 public:
  static std::shared_ptr<Mapping> Open(const std::string& path) {
    // FileSource refuses a FIFO, a device or a directory without blocking.
    const SourcePtr file = Take(FileSource(path));
    const FileRange& range = *file->file_range();
    auto m = std::shared_ptr<Mapping>(new Mapping());
    m->size_ = range.length;
    if (m->size_ > 0) {
      void* p = mmap(nullptr, m->size_, PROT_READ, MAP_SHARED, range.fd, 0);
      if (p == MAP_FAILED) Check(IoError(path + ": mmap", errno));
      m->data_ = static_cast<const uint8_t*>(p);
    }
    return m;
  }
  ~Mapping() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  Mapping() = default;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

py::object LayoutTuple(const TensorLayout& l) {
  std::vector<int64_t> sizes(l.sizes.begin(), l.sizes.end());
  std::vector<int64_t> order(l.dim_order.begin(), l.dim_order.end());
  return py::make_tuple(l.scalar_type, sizes, order);
}

// (mapping, [(key, offset, nbytes, layout or None)]): offsets are absolute.
py::tuple OpenPtd(const std::string& path) {
  std::shared_ptr<Mapping> mapping = Mapping::Open(path);
  std::unique_ptr<PtdFile> file;
  if (mapping->data() == nullptr) {
    file = Take(PtdFile::Open(path));  // an empty file: its error
  } else {
    file = Take(PtdFile::FromMemory(path, mapping->data(), mapping->size(), mapping));
  }
  py::list entries;
  for (const PtdFile::Entry& e : file->entries()) {
    const PtdSegmentMap::Segment& s = file->layout().segments[e.segment_index];
    const uint64_t offset = file->layout().segment_base_offset + s.offset;
    uint64_t nbytes = s.size;
    py::object layout = py::none();
    if (e.layout) {
      nbytes = Take(LayoutNbytes(*e.layout, e.key));
      layout = LayoutTuple(*e.layout);
    }
    entries.append(py::make_tuple(e.key, offset, nbytes, layout));
  }
  return py::make_tuple(py::cast(mapping), entries);
}

// etpack.verify: the library's verdict (etpack/verify.h), raised.
void Verify(const std::vector<std::string>& files, const std::vector<std::string>& data) {
  VerifyOptions options;
  options.data = data;
  Result<VerifyReport> report = VerifyReport{};
  {
    py::gil_scoped_release no_gil;
    report = etpack::Verify(files, options);
  }
  Check(Take(std::move(report)).verdict);
}

// The report's text, printed as it is produced (no tree of it).
std::string InspectJsonText(const std::string& path) {
  std::string text;
  JsonSink sink([&text](std::string_view piece) { text += piece; }, -1);
  Check(Inspect(path, sink));
  sink.Finish();
  return text;
}

// The flatbuffer of any artifact rendered like flatc --json (for tests that
// compare with the goldens' CASE.flatc.json).
std::string FlatcJson(const std::string& path) {
  const OpenedArtifact file = Take(OpenArtifact(path));
  switch (file.kind) {
    case ArtifactKind::kPte: return Take(file.pte->ToFlatcJson());
    case ArtifactKind::kPtd: return Take(file.ptd->ToFlatcJson());
    case ArtifactKind::kBpte: return Take(file.bpte->ToFlatcJson());
  }
  return {};
}

// Memory a torch tensor owns, as a read-only buffer that keeps the tensor
// alive (torch tensors have no buffer protocol of their own).
struct Borrowed {
  uintptr_t address;
  Py_ssize_t nbytes;
  py::object owner;
};

py::buffer_info ReadOnlyBytes(const void* data, py::ssize_t size) {
  return py::buffer_info(const_cast<void*>(data), 1, "B", 1, {size}, {py::ssize_t{1}},
                         /*readonly=*/true);
}

}  // namespace

void DefineModule(py::module_& m) {
  m.doc() = "The C++ half of etpack; use the functions of the etpack package.";
  DefineErrors(m);
  DefineExir(m);

  py::class_<Mapping, std::shared_ptr<Mapping>>(m, "_Mapping", py::buffer_protocol())
      .def_buffer([](Mapping& map) {
        static const uint8_t kEmpty = 0;
        const uint8_t* p = map.data() ? map.data() : &kEmpty;
        return ReadOnlyBytes(p, static_cast<py::ssize_t>(map.size()));
      })
      .def_property_readonly("size", &Mapping::size);

  py::class_<Borrowed>(m, "_Borrowed", py::buffer_protocol())
      .def(py::init([](uintptr_t address, Py_ssize_t nbytes, py::object owner) {
        if (nbytes < 0 || (address == 0 && nbytes > 0)) {
          Raise(Code::kInvalidArgument,
                "no memory behind a tensor of " + std::to_string(nbytes) + " bytes");
        }
        return Borrowed{address, nbytes, std::move(owner)};
      }))
      .def_buffer([](Borrowed& b) {
        static const uint8_t kEmpty = 0;
        const void* p = b.address ? reinterpret_cast<const void*>(b.address) : &kEmpty;
        return ReadOnlyBytes(p, b.nbytes);
      });

  m.def(
      "_save_pte",
      [](py::object path, py::object program, py::object constants, py::object mutable_data,
         py::object delegates, py::object named_data, uint64_t segment_alignment,
         uint64_t constant_alignment, uint64_t delegate_alignment, bool extract_delegate_segments,
         bool dedup_constants, py::object progress, py::object external, uint64_t max_shard_bytes) {
        PteOptions options;
        options.segment_alignment = segment_alignment;
        options.constant_tensor_alignment = constant_alignment;
        options.delegate_alignment = delegate_alignment;
        options.extract_delegate_segments = extract_delegate_segments;
        options.dedup_constants = dedup_constants;
        return SavePte(PathOf(path, "path"), program, constants, mutable_data, delegates,
                       named_data, options, progress, external, max_shard_bytes);
      });
  m.def("_save_ptd", [](py::object path, py::object entries, uint64_t segment_alignment,
                        uint64_t max_shard_bytes, py::object progress) {
    return SavePtd(PathOf(path, "path"), entries, segment_alignment, max_shard_bytes, progress);
  });
  m.def("_update", [](py::object path, py::object entries, py::object paths, py::object progress) {
    return Update(PathOf(path, "path"), entries, paths, progress);
  });
  m.def("_save_bpte",
        [](py::object path, py::object program, py::object cases, const std::string& layout) {
          SaveBpte(PathOf(path, "path"), program, cases, layout);
        });
  m.def("_open_ptd", [](py::object path) { return OpenPtd(PathOf(path, "path")); });
  m.def("_inspect", [](py::object path) { return InspectJsonText(PathOf(path, "path")); });
  m.def("_verify", [](py::object paths, py::object data) {
    Verify(PathsOf(paths, "path"), PathsOf(data, "data"));
  });
  m.def("_flatc_json", [](py::object path) { return FlatcJson(PathOf(path, "path")); });
  m.def("_share", [](py::object inputs, py::object out_dir, py::object data,
                     uint64_t max_shard_bytes, uint64_t alignment, uint64_t min_bytes,
                     bool integrity, bool dry_run, py::object progress) {
    ShareOptions options;
    options.out_dir = PathOf(out_dir, "out_dir");
    options.data_name = PathOf(data, "data");
    options.max_shard_bytes = max_shard_bytes;
    options.alignment = alignment;
    options.min_bytes = min_bytes;
    options.integrity_table = integrity;
    return Share(inputs, options, dry_run, progress);
  });
}

}  // namespace etpack::python

PYBIND11_MODULE(_etpack, m) { etpack::python::DefineModule(m); }
