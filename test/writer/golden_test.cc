// Compatibility with the reference serializer (test/golden/README.md):
// writing each case's logical input must give the same decoded structure
// (flatc text rendering) and byte-identical segment data; every reference
// binary must validate, and repacking it must keep every byte of data.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/manifest.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/tree_builder.h"
#include "program_etpack_generated.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<PteFile> FromBytes(const std::string& name, std::vector<uint8_t> bytes) {
  return Read<PteFile>(name, std::move(bytes));
}

// Through the file's sources: Open() reads only the flatbuffer.
std::vector<uint8_t> Range(const PteFile& f, uint64_t off, uint64_t len) {
  Result<std::vector<uint8_t>> bytes = ReadAll(*f.RangeSource(off, len));
  REQUIRE(bytes.ok());
  return *bytes;
}

// Every datum a runtime could read from the file, by a stable name.
std::map<std::string, std::vector<uint8_t>> DataOf(const PteFile& f) {
  std::map<std::string, std::vector<uint8_t>> out;
  const fb::Program& p = f.program();
  const uint64_t base = f.header().segment_base_offset;
  auto seg_start = [&](uint32_t i) { return base + p.segments()->Get(i)->offset(); };
  for (uint32_t e = 0; e < p.execution_plan()->size(); ++e) {
    const auto* plan = p.execution_plan()->Get(e);
    for (uint32_t v = 0; v < plan->values()->size(); ++v) {
      const fb::Tensor* t = plan->values()->Get(v)->val_as_Tensor();
      if (!t || t->data_buffer_idx() == 0) continue;
      if (t->extra_tensor_info() &&
          t->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL) {
        continue;
      }
      auto n = TensorNbytes(static_cast<int>(t->scalar_type()), *t->sizes(), "t");
      REQUIRE(n.ok());
      const std::string name = "plan" + std::to_string(e) + ".value" + std::to_string(v);
      if (t->allocation_info() == nullptr) {
        const auto* cs = p.constant_segment();
        if (cs && cs->offsets() && cs->offsets()->size() > 1) {
          out["constant " + name] = Range(
              f, seg_start(cs->segment_index()) + cs->offsets()->Get(t->data_buffer_idx()), *n);
        } else {
          const auto* st = p.constant_buffer()->Get(t->data_buffer_idx())->storage();
          out["constant " + name] = std::vector<uint8_t>(st->data(), st->data() + *n);
        }
      } else if (p.mutable_data_segments()) {
        const auto* m = p.mutable_data_segments()->Get(0);
        out["mutable " + name] =
            Range(f, seg_start(m->segment_index()) + m->offsets()->Get(t->data_buffer_idx()), *n);
      }
    }
    for (uint32_t d = 0; plan->delegates() && d < plan->delegates()->size(); ++d) {
      const auto* ref = plan->delegates()->Get(d)->processed();
      const std::string name = "delegate plan" + std::to_string(e) + "." + std::to_string(d);
      if (ref->location() == fb::DataLocation::SEGMENT) {
        out[name] = Range(f, seg_start(ref->index()), p.segments()->Get(ref->index())->size());
      } else {
        const auto* data = p.backend_delegate_data()->Get(ref->index())->data();
        out[name] = std::vector<uint8_t>(data->data(), data->data() + data->size());
      }
    }
  }
  for (uint32_t i = 0; p.named_data() && i < p.named_data()->size(); ++i) {
    const auto* nd = p.named_data()->Get(i);
    out["named " + nd->key()->str()] =
        Range(f, seg_start(nd->segment_index()), p.segments()->Get(nd->segment_index())->size());
  }
  return out;
}

const char* kPteCases[] = {
    "pte_constants",        "pte_constants_align64", "pte_mutable",     "pte_delegates",
    "pte_delegates_inline", "pte_named_data",        "pte_no_segments", "pte_multi_method",
    "pte_all_kinds",        "pte_external",          "pte_fat"};

const char* kUpstream[] = {"add",
                           "ModuleLinear-no-constant-segment",
                           "arduino_AddModel_model",
                           "arduino_HelloExecuTorch_model",
                           "arduino_KeywordSpotting_model",
                           "stories260k_hybrid_llama_qnn"};

}  // namespace

TEST_CASE("writing each golden input reproduces the reference artifact") {
  for (const char* name : kPteCases) {
    SECTION(name) {
      const std::string base = GoldenDir() + "/" + name;
      auto manifest = LoadPteManifest(base + ".input.json");
      INFO(manifest.status().ToString());
      REQUIRE(manifest.ok());
      auto plan = PlanPte(manifest->input, manifest->options);
      INFO(plan.status().ToString());
      REQUIRE(plan.ok());
      auto mine = FromBytes(std::string(name) + " (etpack)", Materialize(plan->artifact));
      auto ref = PteFile::Open(base + ".pte");
      REQUIRE(ref.ok());

      // 1. Decoded structure: the flatc rendering equals the reference's.
      auto text = mine->ToFlatcJson();
      REQUIRE(text.ok());
      CHECK(*text == Slurp(base + ".flatc.json"));

      // 2. Segment bytes, padding included.
      const ExtendedHeader& h = mine->header();
      const ExtendedHeader& rh = (*ref)->header();
      CHECK(h.present == rh.present);
      CHECK(h.segment_data_size == rh.segment_data_size);
      CHECK(Range(*mine, h.segment_base_offset, h.segment_data_size) ==
            Range(**ref, rh.segment_base_offset, rh.segment_data_size));

      // 3. Header rules.
      CHECK(std::memcmp(mine->head() + 4, "ET12", 4) == 0);
      if (h.present) {
        CHECK(h.length == 32);
        const uint64_t seg_align = manifest->options.segment_alignment;
        CHECK(h.segment_base_offset == ((h.program_size + seg_align - 1) & ~(seg_align - 1)));
        CHECK(mine->size() == h.segment_base_offset + h.segment_data_size);
        for (uint64_t i = h.program_size; i < h.segment_base_offset; ++i) {
          REQUIRE(mine->head()[i] == 0);
        }
      } else {
        CHECK(h.segment_data_size == 0);
      }
      CHECK(DataOf(*mine) == DataOf(**ref));
    }
  }
}

TEST_CASE("each golden structure given as flatbuffer bytes writes the same file") {
  for (const char* name : kPteCases) {
    SECTION(name) {
      const std::string base = GoldenDir() + "/" + name;
      auto manifest = LoadPteManifest(base + ".input.json");
      REQUIRE(manifest.ok());
      // What any flatbuffers builder makes of the structure.
      auto structure = BuildFlatbuffer(SchemaId::kProgram, manifest->input.program.tree());
      INFO(structure.status().ToString());
      REQUIRE(structure.ok());
      PteInput from_bytes = manifest->input;
      from_bytes.program = ProgramStructure::FromFlatbuffer(OwnedSource(*structure));
      auto tree_plan = PlanPte(manifest->input, manifest->options);
      REQUIRE(tree_plan.ok());
      auto bytes_plan = PlanPte(std::move(from_bytes), manifest->options);
      INFO(bytes_plan.status().ToString());
      REQUIRE(bytes_plan.ok());
      CHECK(Materialize(bytes_plan->artifact) == Materialize(tree_plan->artifact));
    }
  }
}

TEST_CASE("reference binaries validate, and repack keeps every byte of data") {
  std::vector<std::string> files;
  for (const char* c : kPteCases) files.push_back(GoldenDir() + "/" + c + ".pte");
  for (const char* u : kUpstream) files.push_back(GoldenDir() + "/upstream/" + u + ".pte");
  for (const std::string& path : files) {
    SECTION(path) {
      auto f = PteFile::Open(path);
      INFO(f.status().ToString());
      REQUIRE(f.ok());
      auto input = (*f)->ToInput();
      INFO(input.status().ToString());
      REQUIRE(input.ok());
      auto plan = PlanPte(*input);
      INFO(plan.status().ToString());
      REQUIRE(plan.ok());
      auto repacked = FromBytes(path + " (repacked)", Materialize(plan->artifact));
      CHECK(DataOf(*repacked) == DataOf(**f));
      // Repacking changes where data lives, never the program.
      CHECK(repacked->program().execution_plan()->size() ==
            (*f)->program().execution_plan()->size());
    }
  }
}

TEST_CASE("repack with the case's own options reproduces the segment bytes") {
  for (const char* name : kPteCases) {
    SECTION(name) {
      const std::string base = GoldenDir() + "/" + name;
      auto manifest = LoadPteManifest(base + ".input.json");
      REQUIRE(manifest.ok());
      auto ref = PteFile::Open(base + ".pte");
      REQUIRE(ref.ok());
      auto input = (*ref)->ToInput();
      REQUIRE(input.ok());
      auto plan = PlanPte(*input, manifest->options);
      REQUIRE(plan.ok());
      auto again = FromBytes(std::string(name) + " (repacked)", Materialize(plan->artifact));
      const ExtendedHeader& h = again->header();
      const ExtendedHeader& rh = (*ref)->header();
      CHECK(Range(*again, h.segment_base_offset, h.segment_data_size) ==
            Range(**ref, rh.segment_base_offset, rh.segment_data_size));
      CHECK(*again->ToFlatcJson() == *(*ref)->ToFlatcJson());
    }
  }
}

// ------------------------------------------------------------------ .ptd

namespace {

const char* kPtdCases[] = {"ptd_basic", "ptd_shared_blob"};

std::unique_ptr<PtdFile> PtdFromBytes(const std::string& name, std::vector<uint8_t> bytes) {
  return Read<PtdFile>(name, std::move(bytes));
}

std::vector<uint8_t> Range(const PtdFile& f, uint64_t off, uint64_t len) {
  REQUIRE(off + len <= f.size());
  return std::vector<uint8_t>(f.head() + off, f.head() + off + len);
}

uint32_t LE32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t LE64(const uint8_t* p) { return uint64_t{LE32(p)} | uint64_t{LE32(p + 4)} << 32; }

}  // namespace

TEST_CASE("writing each golden .ptd input reproduces the reference artifact") {
  for (const char* name : kPtdCases) {
    SECTION(name) {
      const std::string base = GoldenDir() + "/" + name;
      auto manifest = LoadPtdManifest(base + ".input.json");
      INFO(manifest.status().ToString());
      REQUIRE(manifest.ok());
      auto plan = PlanPtd(manifest->input, manifest->options);
      INFO(plan.status().ToString());
      REQUIRE(plan.ok());
      auto mine = PtdFromBytes(std::string(name) + " (etpack)", Materialize(plan->artifact));
      auto ref = PtdFile::Open(base + ".ptd");
      INFO(ref.status().ToString());
      REQUIRE(ref.ok());

      // 1. Decoded structure.
      auto text = mine->ToFlatcJson();
      REQUIRE(text.ok());
      CHECK(*text == Slurp(base + ".flatc.json"));

      // 2. Segment data, padding included.
      const FlatTensorHeader& h = mine->header();
      const FlatTensorHeader& rh = (*ref)->header();
      CHECK(h.segment_data_size == rh.segment_data_size);
      CHECK(Range(*mine, h.segment_base_offset, h.segment_data_size) ==
            Range(**ref, rh.segment_base_offset, rh.segment_data_size));

      // 3. Header rules, read from the raw bytes.
      const uint8_t* d = mine->head();
      CHECK(std::memcmp(d + 4, "FT01", 4) == 0);
      CHECK(std::memcmp(d + 8, "FH01", 4) == 0);
      CHECK(LE32(d + 12) == 40);
      CHECK(LE64(d + 16) == 48);
      CHECK(LE64(d + 24) == plan->layout.flatbuffer_size);
      CHECK(LE64(d + 32) == h.segment_base_offset);
      CHECK(LE64(d + 40) == h.segment_data_size);
      CHECK(h.length == 40);
      CHECK(h.flatbuffer_offset == 48);
      const uint64_t seg_align = manifest->options.segment_alignment;
      CHECK(h.segment_base_offset % seg_align == 0);
      CHECK(h.segment_base_offset >= h.flatbuffer_offset + h.flatbuffer_size);
      CHECK(h.segment_base_offset < h.flatbuffer_offset + h.flatbuffer_size + seg_align);
      CHECK(mine->size() == h.segment_base_offset + h.segment_data_size);
      for (uint64_t i = h.flatbuffer_offset + h.flatbuffer_size; i < h.segment_base_offset; ++i) {
        REQUIRE(d[i] == 0);
      }
      // The root offset points past the inserted header into the flatbuffer.
      CHECK(LE32(d) >= 48);
      CHECK(LE32(d) < h.flatbuffer_offset + h.flatbuffer_size);

      // Same keys, segments and layouts as the reference, entry by entry.
      REQUIRE(mine->entries().size() == (*ref)->entries().size());
      for (size_t i = 0; i < mine->entries().size(); ++i) {
        CHECK(mine->entries()[i].key == (*ref)->entries()[i].key);
        CHECK(mine->entries()[i].segment_index == (*ref)->entries()[i].segment_index);
        CHECK(mine->entries()[i].layout == (*ref)->entries()[i].layout);
      }
    }
  }
}

TEST_CASE("golden .ptd files open and pte_external resolves against ptd_basic") {
  auto basic = PtdFile::Open(GoldenDir() + "/ptd_basic.ptd");
  INFO(basic.status().ToString());
  REQUIRE(basic.ok());
  auto shared = PtdFile::Open(GoldenDir() + "/ptd_shared_blob.ptd");
  INFO(shared.status().ToString());
  REQUIRE(shared.ok());
  CHECK((*basic)->entries().size() == 3);
  CHECK((*shared)->entries().size() == 4);
  CHECK((*shared)->entries()[0].segment_index == (*shared)->entries()[1].segment_index);
  CHECK_FALSE((*shared)->entries()[2].layout.has_value());

  auto pte = PteFile::Open(GoldenDir() + "/pte_external.pte");
  REQUIRE(pte.ok());
  uint64_t resolved = 0;
  Status s = CheckExternalReferences(**pte, {basic->get()}, &resolved);
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(resolved == 3);

  // The other golden .ptd has none of those keys.
  Status wrong = CheckExternalReferences(**pte, {shared->get()});
  CHECK_FALSE(wrong.ok());
  CHECK(wrong.code() == Code::kNotFound);
}
