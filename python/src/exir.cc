// The C++ half of etpack.exir: planned artifacts that are written only when
// asked (to an open file, to a path atomically, or into bytes), and the
// functions that plan them from exporter objects (exir_program_walk.h).

#include "exir.h"

#include <fcntl.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "etpack/artifact_source.h"
#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/writer.h"
#include "exir_program_walk.h"
#include "items.h"
#include "write.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

// What a file object with no descriptor (io.BytesIO) is handed at a time.
constexpr uint64_t kChunk = uint64_t{8} << 20;

// An artifact planned but not written. It keeps the borrowed buffers of
// every object it was planned from (shared with the artifacts planned with
// it), so the exporter's bytes stay valid for as long as it lives.
class Artifact {
 public:
  Artifact(std::shared_ptr<Items> items, ArtifactPlan plan, std::string kind)
      : items_(std::move(items)), plan_(std::move(plan)), kind_(std::move(kind)) {}

  uint64_t size() const { return plan_.file_size; }
  const std::string& kind() const { return kind_; }

  void Save(const std::string& path) {
    PlanAndWrite(
        [&](ArtifactFiles* files) -> Status {
          *files = {{path, &plan_}};
          return Status::OK();
        },
        py::none());
  }

  py::bytes Bytes() {
    const SourcePtr source = Source();
    PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size()));
    if (out == nullptr) throw py::error_already_set();
    py::bytes bytes = py::reinterpret_steal<py::bytes>(out);
    Status s;
    {
      py::gil_scoped_release no_gil;
      s = source->ReadAt(0, PyBytes_AS_STRING(out), static_cast<size_t>(size()));
    }
    Check(s);
    return bytes;
  }

  // Streams into `f` at its position and leaves it positioned after the
  // artifact, as a write(bytes(a)) would.
  void WriteToFile(py::handle f) {
    const std::string name = NameOf(f);
    const File file = Descriptor(f, name);
    // A file the artifact reads, reached through an open file, is refused as
    // save() refuses it, before anything is written.
    if (file.fd >= 0) Check(CheckNotReadBy(plan_, file.fd, name));
    if (file.positioned) {
      Status s;
      {
        py::gil_scoped_release no_gil;
        s = WriteArtifactAt(plan_, file.fd, file.position, name);
      }
      Check(s);
      f.attr("seek")(file.position + size());
      return;
    }
    const SourcePtr source = Source();
    py::object write = f.attr("write");
    for (uint64_t done = 0; done < size();) {
      const uint64_t n = std::min(kChunk, size() - done);
      PyObject* chunk = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n));
      if (chunk == nullptr) throw py::error_already_set();
      py::bytes bytes = py::reinterpret_steal<py::bytes>(chunk);
      Status s;
      {
        py::gil_scoped_release no_gil;
        s = source->ReadAt(done, PyBytes_AS_STRING(chunk), static_cast<size_t>(n));
      }
      Check(s);
      // A raw file may take less than it was given.
      for (uint64_t put = 0; put < n;) {
        py::object rest = put == 0 ? py::object(bytes)
                                   : py::reinterpret_steal<py::object>(PyMemoryView_FromMemory(
                                         PyBytes_AS_STRING(chunk) + put,
                                         static_cast<Py_ssize_t>(n - put), PyBUF_READ));
        put += Written(write(rest), name, done + put, n - put);
      }
      done += n;
    }
  }

 private:
  SourcePtr Source() {
    if (!source_) source_ = Take(ArtifactSource(plan_, kind_));
    return source_;
  }

  // f.`name` when it has one, else null. Only an AttributeError means it
  // has none: anything else a property raises (a KeyboardInterrupt)
  // propagates, where py::hasattr would swallow it.
  static py::object Attr(py::handle f, const char* name) {
    PyObject* v = PyObject_GetAttrString(f.ptr(), name);
    if (v != nullptr) return py::reinterpret_steal<py::object>(v);
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return py::object();
  }

  // f.name(), or null when the file cannot do it: io.UnsupportedOperation
  // (an OSError) or an AttributeError. Anything else propagates.
  static py::object CallIfSupported(py::handle f, const char* name) {
    try {
      return f.attr(name)();
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_OSError) && !e.matches(PyExc_AttributeError)) throw;
      return py::object();
    }
  }

  static std::string NameOf(py::handle f) {
    if (py::object name = Attr(f, "name")) return py::str(name);
    return "file object";
  }

  // What one write() of `given` bytes at artifact offset `at` took: between
  // 1 and `given`. None (a non-blocking raw file took nothing) and 0 would
  // leave the chunk unwritten (retrying could loop forever), and anything
  // else is not a count of bytes taken: each is an error naming the call.
  static uint64_t Written(py::handle wrote, const std::string& name, uint64_t at, uint64_t given) {
    const std::string call = name + ": write() of " + std::to_string(given) +
                             " bytes at artifact offset " + std::to_string(at);
    if (wrote.is_none()) {
      PyErr_SetString(PyExc_BlockingIOError,
                      (call + " took no bytes (a non-blocking file?)").c_str());
      throw py::error_already_set();
    }
    if (!PyLong_Check(wrote.ptr()) || PyBool_Check(wrote.ptr())) {
      RaiseTypeError(call + " returned a " +
                     std::string(py::str(py::type::handle_of(wrote).attr("__name__"))) +
                     ", not the number of bytes written");
    }
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(wrote.ptr(), &overflow);
    if (overflow == 0 && n == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0 || n <= 0 || static_cast<uint64_t>(n) > given) {
      Raise(Code::kIoError, call + " returned " + std::string(py::str(wrote)) +
                                (n == 0 && overflow == 0 ? " (the file took nothing)" : "") +
                                ", expected a count from 1 to " + std::to_string(given));
    }
    return static_cast<uint64_t>(n);
  }

  struct File {
    int fd = -1;              // its descriptor, when it has one
    bool positioned = false;  // written through fd at `position`
    uint64_t position = 0;
  };

  // The descriptor of `f` and whether to write through it at its position,
  // after flushing what it buffers: not when it has none or cannot take
  // positioned writes (no fileno, not seekable, append mode, read-only).
  static File Descriptor(py::handle f, const std::string& name) {
    File file;
    if (!Attr(f, "fileno")) return file;
    // Outside the try: a failing flush (a full disk) is the caller's error,
    // not a sign that `f` has no descriptor.
    if (py::object flush = Attr(f, "flush")) flush();
    const py::object fileno = CallIfSupported(f, "fileno");
    if (!fileno) return file;
    const int fd = static_cast<int>(IntIn(fileno, name + ": fileno()", 0, INT_MAX));
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return file;  // not open: write() says what it says
    file.fd = fd;
    if ((flags & O_APPEND) != 0 || (flags & O_ACCMODE) == O_RDONLY) return file;
    if (py::object seekable_fn = Attr(f, "seekable")) {
      const int seekable = PyObject_IsTrue(seekable_fn().ptr());
      if (seekable < 0) throw py::error_already_set();
      if (seekable == 0) return file;
    }
    const py::object tell = CallIfSupported(f, "tell");
    if (!tell) return file;
    file.position = static_cast<uint64_t>(IntIn(tell, name + ": tell()", 0, INT64_MAX));
    file.positioned = true;
    return file;
  }

  std::shared_ptr<Items> items_;
  ArtifactPlan plan_;
  std::string kind_;
  SourcePtr source_;
};

// Items are released under the GIL, which Python holds when it frees the
// last artifact that shares them.
std::shared_ptr<Items> NewItems() { return std::make_shared<Items>(); }

PteOptions OptionsOf(py::handle extract, py::handle segment, py::handle constant,
                     py::handle delegate) {
  PteOptions o;
  o.extract_delegate_segments = extract.cast<bool>();  // bool() in etpack/exir.py
  o.segment_alignment = UInt64Of(segment, "segment_alignment");
  if (!constant.is_none())
    o.constant_tensor_alignment = UInt64Of(constant, "constant_tensor_alignment");
  if (!delegate.is_none()) o.delegate_alignment = UInt64Of(delegate, "delegate_alignment");
  return o;
}

// Plans with the GIL released (the inputs hold no Python objects).
template <typename T, typename Fn>
T PlanReleased(Fn&& fn) {
  std::optional<Result<T>> r;
  {
    py::gil_scoped_release no_gil;
    r.emplace(fn());
  }
  return Take(std::move(*r));
}

}  // namespace

void DefineExir(py::module_& m) {
  py::class_<Artifact>(m, "Artifact",
                       "A planned .pte or .ptd: nothing is written until it is asked for.")
      .def("__len__", [](const Artifact& a) { return static_cast<Py_ssize_t>(a.size()); })
      .def("__bytes__", &Artifact::Bytes, "Materializes the artifact.")
      .def("write_to_file", &Artifact::WriteToFile, py::arg("f"),
           "Streams the artifact into the open binary file f at its position.")
      .def(
          "save", [](Artifact& a, py::object path) { a.Save(PathOf(path, "path")); },
          py::arg("path"), "Writes the artifact to path atomically.")
      .def("__repr__", [](const Artifact& a) {
        return "<etpack.exir.Artifact " + a.kind() + ", " + std::to_string(a.size()) + " bytes>";
      });

  m.def("_exir_pte", [](py::object program, py::object mutable_data, py::object named_data,
                        py::object root, py::object extract, py::object segment,
                        py::object constant, py::object delegate) {
    const PteOptions options = OptionsOf(extract, segment, constant, delegate);
    const std::string r = Utf8Of(root, "root");
    const PteNames names = r == "program"
                               ? PteNames{"program", "mutable_data", "named_data"}
                               : PteNames{r + ".program", r + ".mutable_data", r + ".named_data"};
    auto items = NewItems();
    PteInput input = WalkPteFile(*items, names, program, mutable_data, named_data);
    PtePlan plan = PlanReleased<PtePlan>([&]() -> Result<PtePlan> {
      Result<PtePlan> planned = PlanPte(std::move(input), options);
      if (!planned.ok()) return planned.status().WithContext(names.program);
      return planned;
    });
    return Artifact(items, std::move(plan.artifact), "pte");
  });

  m.def("_exir_ptd", [](py::object payload, py::object segment) {
    PtdOptions options;
    options.segment_alignment = UInt64Of(segment, "segment_alignment");
    auto items = NewItems();
    PtdInput input = WalkDataPayload(*items, "data_payload", payload);
    PtdPlan plan = PlanReleased<PtdPlan>([&] { return PlanPtd(input, options); });
    return Artifact(items, std::move(plan.artifact), "ptd");
  });

  // (pte, [(tag, ptd)]) planned together as PlanProgramWithData plans them.
  m.def("_exir_for_executorch",
        [](py::object emitter_output, py::object named_data_store, py::object extract,
           py::object segment, py::object constant, py::object delegate) {
          const PteOptions options = OptionsOf(extract, segment, constant, delegate);
          auto items = NewItems();
          ExirInputs inputs = WalkForExecutorch(*items, emitter_output, named_data_store);
          std::vector<ExternalDataFile> data;
          for (auto& [tag, input] : inputs.data) data.push_back({tag, std::move(input)});
          ProgramWithDataPlan plan = PlanReleased<ProgramWithDataPlan>([&] {
            return PlanProgramWithData("program", std::move(inputs.program), options,
                                       std::move(data), "emitter_output.program");
          });
          py::list ptds;
          for (ProgramWithDataPlan::Data& d : plan.data) {
            ptds.append(py::make_tuple(d.name, Artifact(items, std::move(d.plan.artifact), "ptd")));
          }
          return py::make_tuple(Artifact(items, std::move(plan.program.artifact), "pte"), ptds);
        });

  // Writes the .pte and each tag's .ptd in `ptd_dir` ({tag}, with ".ptd"
  // appended unless the tag ends in it; with max_shard_bytes, its shards) as
  // one unit. Returns the .ptd paths.
  m.def(
      "_exir_save", [](py::object pte_path, py::object emitter_output, py::object named_data_store,
                       py::object ptd_dir, py::object extract, py::object segment,
                       py::object constant, py::object delegate, uint64_t max_shard_bytes) {
        const PteOptions options = OptionsOf(extract, segment, constant, delegate);
        const std::string path = PathOf(pte_path, "pte_path");
        std::string dir = PathOf(ptd_dir, "ptd_dir");
        if (!dir.empty() && dir.back() != '/') dir += '/';
        auto items = NewItems();
        ExirInputs inputs = WalkForExecutorch(*items, emitter_output, named_data_store);
        std::vector<ExternalDataFile> data;
        for (auto& [tag, input] : inputs.data) {
          const bool suffixed = tag.size() >= 4 && tag.compare(tag.size() - 4, 4, ".ptd") == 0;
          data.push_back({dir + tag + (suffixed ? "" : ".ptd"), std::move(input), max_shard_bytes});
        }
        ProgramWithDataPlan plan;
        PlanAndWrite(
            [&](ArtifactFiles* files) -> Status {
              ETPACK_ASSIGN_OR_RETURN(
                  plan, PlanProgramWithData(path, std::move(inputs.program), options,
                                            std::move(data), path + ": emitter_output.program"));
              *files = plan.files();
              return Status::OK();
            },
            py::none());
        py::list written;
        for (const auto& d : plan.data) written.append(PathObject(d.name));
        return written;
      });
}

}  // namespace etpack::python
