// The C++ half of etpack.exir: planned artifacts that are written only when
// asked (to an open file, to a path atomically, or into bytes), and the
// functions that plan them from exporter objects (exir_tree.h).

#include "exir.h"

#include <fcntl.h>

#include <algorithm>
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
#include "exir_tree.h"
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
    int fd = -1;
    uint64_t position = 0;
    if (Descriptor(f, &fd, &position)) {
      const std::string name = NameOf(f);
      Status s;
      {
        py::gil_scoped_release no_gil;
        s = WriteArtifactAt(plan_, fd, position, name);
      }
      Check(s);
      f.attr("seek")(position + size());
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
        py::object wrote = write(rest);
        // None: a non-blocking raw file took nothing; counting it as written
        // would drop the chunk silently.
        if (wrote.is_none()) {
          PyErr_SetString(PyExc_BlockingIOError,
                          (NameOf(f) + ": the file took no bytes (a non-blocking file?)").c_str());
          throw py::error_already_set();
        }
        put += wrote.cast<uint64_t>();
      }
      done += n;
    }
  }

 private:
  SourcePtr Source() {
    if (!source_) source_ = Take(ArtifactSource(plan_, kind_));
    return source_;
  }

  static std::string NameOf(py::handle f) {
    if (py::hasattr(f, "name")) return py::str(f.attr("name"));
    return "file object";
  }

  // The descriptor and position to write `f` through, after flushing what
  // it buffers; false when it has none or cannot take positioned writes
  // (no fileno, not seekable, append mode).
  static bool Descriptor(py::handle f, int* fd, uint64_t* position) {
    if (!py::hasattr(f, "fileno")) return false;
    // Outside the try: a failing flush (a full disk) is the caller's error,
    // not a sign that `f` has no descriptor.
    if (py::hasattr(f, "flush")) f.attr("flush")();
    try {
      *fd = f.attr("fileno")().cast<int>();
      if (py::hasattr(f, "seekable") && !f.attr("seekable")().cast<bool>()) return false;
      *position = f.attr("tell")().cast<uint64_t>();
    } catch (py::error_already_set& e) {
      // io.UnsupportedOperation (an OSError) and friends: no descriptor.
      if (!e.matches(PyExc_OSError) && !e.matches(PyExc_AttributeError)) throw;
      return false;
    }
    const int flags = fcntl(*fd, F_GETFL);
    return flags >= 0 && (flags & O_APPEND) == 0 && (flags & O_ACCMODE) != O_RDONLY;
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
  o.extract_delegate_segments = extract.cast<bool>();
  o.segment_alignment = segment.cast<uint64_t>();
  if (!constant.is_none()) o.constant_tensor_alignment = constant.cast<uint64_t>();
  if (!delegate.is_none()) o.delegate_alignment = delegate.cast<uint64_t>();
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
    options.segment_alignment = segment.cast<uint64_t>();
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
