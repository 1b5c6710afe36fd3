#include "etpack/archive.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "archive/ordered_jobs.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "fault_output.h"
#include "memory_input.h"
#include "plan/header_insert.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Golden;
using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// Runs a shell command; true when it exits 0.
bool Run(const std::string& command) { return std::system(command.c_str()) == 0; }

std::unique_ptr<Archive> OpenArchive(const std::string& path) {
  Result<std::unique_ptr<Archive>> a = Archive::Open(path);
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  return std::move(a).value();
}

// Compresses `input` with small frames (so even a golden has several) and
// checks both ways back: etpack's reader and stock `zstd -d`.
void CheckRoundTrip(const TempDir& dir, const std::string& input, uint64_t frame_bytes) {
  const std::string zst = dir.File("a.zst");
  ArchiveOptions options;
  options.frame_bytes = frame_bytes;
  Status s = CompressFile(input, zst, options);
  INFO(input << ": " << s.ToString());
  REQUIRE(s.ok());
  const std::vector<uint8_t> original = ReadFile(input);
  std::unique_ptr<Archive> a = OpenArchive(zst);
  CHECK(a->size() == original.size());
  REQUIRE(a->ExtractFile(0, a->size(), dir.File("etpack.out")).ok());
  CHECK(ReadFile(dir.File("etpack.out")) == original);
  REQUIRE(Run("zstd -q -d -f '" + zst + "' -o '" + dir.File("zstd.out") + "'"));
  CHECK(ReadFile(dir.File("zstd.out")) == original);
}

TEST_CASE("archives of goldens round-trip through etpack and zstd -d") {
  TempDir dir;
  for (const char* name : {"pte_all_kinds.pte", "pte_constants.pte", "ptd_basic.ptd",
                           "ptd_shared_blob.ptd", "bpte_basic.bpte", "bpte_multi_method.bpte"}) {
    for (uint64_t frame : {uint64_t{64}, uint64_t{4096}, uint64_t{8} << 20}) {
      CheckRoundTrip(dir, Golden(name), frame);
    }
  }
}

TEST_CASE("archives of any file round-trip, empty ones included") {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(3 << 20, 7);
  WriteFile(dir.File("random.bin"), bytes);
  CheckRoundTrip(dir, dir.File("random.bin"), 1 << 20);
  CHECK(OpenArchive(dir.File("a.zst"))->regions().empty());
  CHECK(OpenArchive(dir.File("a.zst"))->frames().size() == 4);  // index + 3 frames
  WriteFile(dir.File("empty.bin"), std::vector<uint8_t>{});
  CheckRoundTrip(dir, dir.File("empty.bin"), 1 << 20);
  // Frames above 8 MiB take the streaming decoder instead of the workers.
  WriteFile(dir.File("large.bin"), PatternBytes(20 << 20, 8));
  CheckRoundTrip(dir, dir.File("large.bin"), 10 << 20);
  CHECK(OpenArchive(dir.File("a.zst"))->frames().size() == 3);
}

TEST_CASE("an archive round trip runs entirely on the Env") {
  // A .ptd that exists only in memory is compressed into a memory output;
  // the archive, opened from memory, is extracted (whole and one tensor)
  // into memory again. Nothing touches the disk, and each file is opened
  // once.
  const std::string dir = "/nonexistent-etpack-archive-test/";
  const std::string ptd = dir + "w.ptd", zst = dir + "w.ptd.zst";
  const std::vector<uint8_t> original = ReadFile(Golden("ptd_shared_blob.ptd"));
  MemoryInputFs in;
  in.Add(ptd, original);
  MemoryOutputFs out;
  ArchiveOptions options;
  options.frame_bytes = 64;
  const Env env{&in, &out};
  Status s = CompressFile(ptd, zst, options, {}, env);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(in.opened() == std::vector<std::string>{ptd});
  REQUIRE(out.files().count(zst) == 1);
  in.Add(zst, out.files().at(zst));

  Result<std::unique_ptr<Archive>> a = Archive::Open(zst, env);
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  CHECK((*a)->size() == original.size());
  REQUIRE((*a)->ExtractFile(0, (*a)->size(), dir + "back.ptd").ok());
  CHECK(out.files().at(dir + "back.ptd") == original);
  REQUIRE(!(*a)->regions().empty());
  const ArchiveRegion& r = (*a)->regions().back();
  REQUIRE((*a)->ExtractRegionFile(r, dir + "r.bin").ok());
  const auto begin = original.begin() + static_cast<std::ptrdiff_t>(r.offset);
  CHECK(out.files().at(dir + "r.bin") ==
        std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(r.size)));
  CHECK(in.opened() == std::vector<std::string>{ptd, zst});
  // Without the Env the default (POSIX) finds neither file.
  CHECK(CompressPlan(ptd).status().code() == Code::kNotFound);
  CHECK(Archive::Open(zst).status().code() == Code::kNotFound);
}

TEST_CASE("a tensor or segment is extracted from its frames alone") {
  TempDir dir;
  const std::string ptd = Golden("ptd_shared_blob.ptd");
  const std::string zst = dir.File("w.zst");
  ArchiveOptions options;
  options.frame_bytes = 64;
  REQUIRE(CompressFile(ptd, zst, options).ok());
  std::unique_ptr<Archive> a = OpenArchive(zst);
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(ptd);
  REQUIRE(file.ok());
  const std::vector<PtdFile::Entry>& entries = (*file)->entries();
  REQUIRE(!entries.empty());
  for (size_t i = 0; i < entries.size(); ++i) {
    const ArchiveRegion* r = a->Find(RegionKind::kTensor, entries[i].key);
    REQUIRE(r != nullptr);
    const std::string out = dir.File("t" + std::to_string(i));
    REQUIRE(a->ExtractFile(r->offset, r->size, out).ok());
    Result<std::vector<uint8_t>> want = ReadAll(*(*file)->EntrySource(i));
    REQUIRE(want.ok());
    CHECK(ReadFile(out) == *want);
  }
  const ArchiveRegion* seg = a->Find(RegionKind::kSegment, "0");
  REQUIRE(seg != nullptr);
  CHECK(seg->offset == (*file)->header().segment_base_offset);
  // Every region's bytes match the checksum its index records.
  for (const ArchiveRegion& r : a->regions()) {
    INFO(RegionKindName(r.kind) << " '" << r.name << "'");
    CHECK(a->ExtractRegionFile(r, dir.File("r.bin")).ok());
  }
  ArchiveRegion wrong = *seg;
  wrong.xxh3 ^= 1;
  Status s = a->ExtractRegionFile(wrong, dir.File("wrong.bin"));
  CHECK(s.code() == Code::kCorrupt);
  CHECK(Contains(s.message(), zst + ": segment '0': the bytes at "));
  CHECK(!std::filesystem::exists(dir.File("wrong.bin")));
  CHECK(a->Find(RegionKind::kTensor, "no such key") == nullptr);
}

TEST_CASE("named data of a .pte is indexed") {
  TempDir dir;
  const std::string pte = Golden("pte_all_kinds.pte");
  REQUIRE(CompressFile(pte, dir.File("p.zst")).ok());
  std::unique_ptr<Archive> a = OpenArchive(dir.File("p.zst"));
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(pte);
  REQUIRE(file.ok());
  REQUIRE(a->Find(RegionKind::kHead, "") != nullptr);
  CHECK(a->Find(RegionKind::kHead, "")->offset == 0);
  for (const PteNamedData& d : (*file)->named_data()) {
    const ArchiveRegion* r = a->Find(RegionKind::kTensor, d.key);
    REQUIRE(r != nullptr);
    REQUIRE(a->ExtractFile(r->offset, r->size, dir.File("nd")).ok());
    Result<std::vector<uint8_t>> want = ReadAll(*(*file)->SegmentSource(d.segment_index));
    REQUIRE(want.ok());
    CHECK(ReadFile(dir.File("nd")) == *want);
  }
}

TEST_CASE("frames break on region boundaries, merge small pieces, split large ones") {
  const uint64_t M = uint64_t{1} << 20;
  // head [0, 4K), segment [4K, 4K + 20M), tiny segment, large segment.
  std::vector<ArchiveRegion> regions = {
      {RegionKind::kHead, "", 0, 4096},
      {RegionKind::kSegment, "0", 4096, 20 * M},
      {RegionKind::kSegment, "1", 4096 + 20 * M, 100},
      {RegionKind::kSegment, "2", 4096 + 20 * M + 128, 3 * M},
  };
  const uint64_t size = 4096 + 23 * M + 128;
  const std::vector<uint64_t> ends = PlanFrames(size, regions, 8 * M);
  REQUIRE(!ends.empty());
  CHECK(ends.back() == size);
  uint64_t prev = 0;
  for (uint64_t e : ends) {
    CHECK(e > prev);
    CHECK(e - prev <= 8 * M);
    prev = e;
  }
  // The tiny head shares the first frame; the large segment starts a frame.
  CHECK(std::find(ends.begin(), ends.end(), 4096 + 20 * M + 128) != ends.end());
  CHECK(std::find(ends.begin(), ends.end(), 4096) == ends.end());
  CHECK(PlanFrames(0, {}, 8 * M).empty());
  CHECK(PlanFrames(10, {}, 3) == std::vector<uint64_t>{2, 5, 7, 10});
}

// Everything in `dir` but the archive itself.
std::set<std::string> Leftovers(const TempDir& dir) {
  std::set<std::string> names = dir.List();
  names.erase("a.zst");
  names.erase("bad.zst");
  return names;
}

TEST_CASE("a truncated archive is refused, naming the file") {
  TempDir dir;
  CheckRoundTrip(dir, Golden("ptd_basic.ptd"), 64);
  std::filesystem::remove(dir.File("etpack.out"));
  std::filesystem::remove(dir.File("zstd.out"));
  std::vector<uint8_t> bytes = ReadFile(dir.File("a.zst"));
  for (size_t cut : {size_t{1}, size_t{9}, size_t{20}, bytes.size() / 2}) {
    std::vector<uint8_t> shorter(bytes.begin(), bytes.end() - static_cast<std::ptrdiff_t>(cut));
    WriteFile(dir.File("bad.zst"), shorter);
    Result<std::unique_ptr<Archive>> a = Archive::Open(dir.File("bad.zst"));
    REQUIRE(!a.ok());
    CHECK(a.status().code() == Code::kCorrupt);
    CHECK(Contains(a.status().message(), dir.File("bad.zst")));
  }
  CHECK(Leftovers(dir).empty());
}

TEST_CASE("a corrupt frame is an error naming the frame; nothing is left at the destination") {
  TempDir dir;
  const std::vector<uint8_t> payload = PatternBytes(64 << 10, 3);
  std::vector<uint8_t> text(payload.size());
  for (size_t i = 0; i < text.size(); ++i) text[i] = "etpack archive "[i % 15];
  WriteFile(dir.File("in.bin"), text);
  ArchiveOptions options;
  options.frame_bytes = 16 << 10;
  REQUIRE(CompressFile(dir.File("in.bin"), dir.File("a.zst"), options).ok());
  std::unique_ptr<Archive> good = OpenArchive(dir.File("a.zst"));
  REQUIRE(good->frames().size() == 5);
  const ArchiveFrame& f = good->frames()[2];
  std::vector<uint8_t> bytes = ReadFile(dir.File("a.zst"));
  // Every byte of the frame, one at a time: magic, header, blocks, checksum.
  for (uint64_t at = 0; at < f.archive_size; ++at) {
    std::vector<uint8_t> bad = bytes;
    bad[f.archive_offset + at] ^= 0x5a;
    WriteFile(dir.File("bad.zst"), bad);
    std::unique_ptr<Archive> a = OpenArchive(dir.File("bad.zst"));
    // The whole file goes through the workers, frame 2 alone through the
    // streaming decoder: both hold it to the same checks.
    for (bool whole : {true, false}) {
      Status s = whole ? a->ExtractFile(0, a->size(), dir.File("out.bin"))
                       : a->ExtractFile(f.offset, f.size, dir.File("out.bin"));
      INFO("byte " << at << " of frame 2, whole file " << whole << ": " << s.ToString());
      REQUIRE(!s.ok());
      CHECK(s.code() == Code::kCorrupt);
      CHECK(Contains(s.message(), dir.File("bad.zst") + ": frame 2 at archive offset " +
                                      std::to_string(f.archive_offset)));
      CHECK(Leftovers(dir) == std::set<std::string>{"in.bin"});
    }
  }
  // A seek table that lost a frame's size does not drop its bytes silently.
  // (Frame 2's size moves to frame 3, so the total still matches the index.)
  std::vector<uint8_t> bad = bytes;
  uint8_t* entries = bad.data() + bad.size() - 9 - 5 * 8;
  entries[2 * 8 + 4] = 0;
  entries[2 * 8 + 5] = 0;
  entries[3 * 8 + 5] = 0x80;  // 16 KiB + 16 KiB, little-endian
  WriteFile(dir.File("bad.zst"), bad);
  Status s = OpenArchive(dir.File("bad.zst"))->ExtractFile(0, 1, dir.File("out.bin"));
  CHECK(s.ok());  // frame 1 alone is fine
  std::unique_ptr<Archive> a = OpenArchive(dir.File("bad.zst"));
  s = a->ExtractFile(0, a->size(), dir.File("out.bin"));
  CHECK(!s.ok());
  CHECK(Contains(s.message(), "frame 2"));
}

TEST_CASE("a failing output leaves nothing behind") {
  TempDir dir;
  MemoryOutputFs memory;
  Fault fault;
  fault.after_bytes = 100;
  std::unique_ptr<OutputFs> fs = NewFaultInjectingOutputFs(&memory, fault);
  const std::vector<uint8_t> bytes = PatternBytes(1 << 20, 9);
  WriteFile(dir.File("in.bin"), bytes);
  Status s = CompressFile(dir.File("in.bin"), "out.zst", {}, {}, Env{nullptr, fs.get()});
  CHECK(!s.ok());
  CHECK(memory.files().empty());
  MemoryOutputFs ok;
  REQUIRE(CompressFile(dir.File("in.bin"), "out.zst", {}, {}, Env{nullptr, &ok}).ok());
  CHECK(ok.files().count("out.zst") == 1);
}

// Compress and decompress are plans written by the writer: both report
// progress (compress in input bytes, decompress in output bytes), and a
// cancel mid-write leaves the destination as it was, nothing beside it.
TEST_CASE("compress and decompress report progress and can be cancelled mid-write") {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(1 << 20, 9);
  WriteFile(dir.File("in.bin"), bytes);
  ArchiveOptions small;
  small.frame_bytes = 64 << 10;  // 16 frames
  WriteFile(dir.File("a.zst"), std::string("old"));
  WriteFile(dir.File("out.bin"), std::string("old"));
  auto cancel_after = [](int* asked, int n) { return [asked, n] { return ++*asked > n; }; };
  for (bool compress : {true, false}) {
    CAPTURE(compress);
    int asked = 0;
    WriteOptions options;
    options.cancel = cancel_after(&asked, 3);
    Status s = compress ? CompressFile(dir.File("in.bin"), dir.File("a.zst"), small, options)
                        : OpenArchive(dir.File("whole.zst"))
                              ->ExtractFile(0, bytes.size(), dir.File("out.bin"), options);
    INFO(s.ToString());
    CHECK(s.code() == Code::kIoError);
    CHECK(Contains(s.message(), "write cancelled by the caller after "));
    CHECK(ReadFile(dir.File(compress ? "a.zst" : "out.bin")) ==
          std::vector<uint8_t>{'o', 'l', 'd'});
    std::vector<std::pair<uint64_t, uint64_t>> reports;
    options = {};
    options.progress = [&](uint64_t done, uint64_t total) { reports.emplace_back(done, total); };
    s = compress ? CompressFile(dir.File("in.bin"), dir.File("whole.zst"), small, options)
                 : OpenArchive(dir.File("whole.zst"))
                       ->ExtractFile(0, bytes.size(), dir.File("out.bin"), options);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE_FALSE(reports.empty());
    CHECK(reports.back() == std::make_pair(uint64_t{1} << 20, uint64_t{1} << 20));
    CHECK(dir.List() == std::set<std::string>{"in.bin", "a.zst", "out.bin", "whole.zst"});
  }
  CHECK(ReadFile(dir.File("out.bin")) == bytes);
}

TEST_CASE("a disk without room for zstd's bound is told why compress needs it") {
  TempDir dir;
  WriteFile(dir.File("in.bin"), PatternBytes(1 << 20, 4));
  MemoryOutputFs memory;
  Fault fault;
  fault.step = FaultStep::kReserve;
  std::unique_ptr<OutputFs> fs = NewFaultInjectingOutputFs(&memory, fault);
  Status s = CompressFile(dir.File("in.bin"), "out.zst", {}, {}, Env{nullptr, fs.get()});
  INFO(s.ToString());
  CHECK(!s.ok());
  CHECK(Contains(s.message(), "compressing " + dir.File("in.bin") + " (1048576 bytes)"));
  CHECK(Contains(s.message(), "known only once it is written"));
  CHECK(memory.files().empty());
}

TEST_CASE("a worker out of memory is an error naming its job, not a crash") {
  for (bool in_worker_setup : {false, true}) {
    Status s = RunOrderedJobs<int>(
        3, 2, 3, [](size_t i) { return "w.ptd: frame " + std::to_string(i); },
        [in_worker_setup]() -> int {
          if (in_worker_setup) throw std::bad_alloc();
          return 0;
        },
        [](int&, size_t i, std::vector<uint8_t>* out) -> Status {
          if (i == 1) throw std::bad_alloc();
          out->assign(1, static_cast<uint8_t>(i));
          return Status::OK();
        },
        [](size_t, const std::vector<uint8_t>&) { return Status::OK(); });
    INFO(s.ToString());
    CHECK(s.code() == Code::kOutOfRange);
    CHECK(Contains(s.message(), in_worker_setup ? "w.ptd: frame 0: out of memory"
                                                : "w.ptd: frame 1: out of memory"));
  }
}

TEST_CASE("options out of range are refused") {
  TempDir dir;
  WriteFile(dir.File("in.bin"), PatternBytes(10));
  ArchiveOptions o;
  o.frame_bytes = 0;
  CHECK(CompressFile(dir.File("in.bin"), dir.File("a.zst"), o).code() == Code::kInvalidArgument);
  o = {};
  o.level = 0;
  CHECK(CompressFile(dir.File("in.bin"), dir.File("a.zst"), o).code() == Code::kInvalidArgument);
  CHECK(dir.List() == std::set<std::string>{"in.bin"});
}

TEST_CASE("an archive whose index has no checksums (EPX1) decompresses whole, regions refused") {
  TempDir dir;
  // Made by etpack compress before the region checksums (kept as a fuzz seed).
  const std::string old = testing::GoldenDir() + "/../fuzz/seeds/archive/ptd_basic_epx1.ptd.zst";
  std::unique_ptr<Archive> a = OpenArchive(old);
  CHECK(a->regions().empty());
  REQUIRE(a->ExtractFile(0, a->size(), dir.File("w.ptd")).ok());
  CHECK(ReadFile(dir.File("w.ptd")) == ReadFile(Golden("ptd_basic.ptd")));
}

TEST_CASE("etpack compress / decompress --tensor on the command line") {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  TempDir dir;
  const std::string ptd = Golden("ptd_basic.ptd");
  const std::string etpack = std::string("'") + bin + "'";
  REQUIRE(Run(etpack + " compress '" + ptd + "' -o '" + dir.File("w.zst") + "' > /dev/null"));
  REQUIRE(Run(etpack + " decompress '" + dir.File("w.zst") + "' -o '" + dir.File("w.ptd") +
              "' > /dev/null"));
  CHECK(ReadFile(dir.File("w.ptd")) == ReadFile(ptd));
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(ptd);
  REQUIRE(file.ok());
  const std::string key = (*file)->entries()[0].key;
  REQUIRE(Run(etpack + " decompress '" + dir.File("w.zst") + "' --tensor '" + key + "' -o '" +
              dir.File("t.bin") + "' > /dev/null"));
  Result<std::vector<uint8_t>> want = ReadAll(*(*file)->EntrySource(0));
  REQUIRE(want.ok());
  CHECK(ReadFile(dir.File("t.bin")) == *want);
  CHECK(!Run(etpack + " decompress '" + dir.File("w.zst") + "' --tensor nope -o '" +
             dir.File("n.bin") + "' 2> /dev/null"));
  CHECK(!std::filesystem::exists(dir.File("n.bin")));
}

// The index frame of `archive` with the record [kind][LE64 offset][LE64 size]
// of tensor region `from` pointed at region `to`'s bytes instead.
std::vector<uint8_t> RedirectRegion(std::vector<uint8_t> archive, const ArchiveRegion& from,
                                    const ArchiveRegion& to) {
  uint8_t want[17] = {static_cast<uint8_t>(RegionKind::kTensor)};
  StoreLE64(want + 1, from.offset);
  StoreLE64(want + 9, from.size);
  auto at = std::search(archive.begin(), archive.end(), want, want + sizeof want);
  REQUIRE(at != archive.end());
  StoreLE64(&*at + 1, to.offset);
  StoreLE64(&*at + 9, to.size);
  return archive;
}

TEST_CASE("an index that points a tensor at other bytes is caught on extraction") {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  TempDir dir;
  const std::string ptd = Golden("ptd_basic.ptd");
  REQUIRE(CompressFile(ptd, dir.File("a.zst")).ok());
  std::unique_ptr<Archive> a = OpenArchive(dir.File("a.zst"));
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(ptd);
  REQUIRE(file.ok());
  REQUIRE((*file)->entries().size() >= 2);
  const std::string key = (*file)->entries()[0].key;
  const ArchiveRegion* r0 = a->Find(RegionKind::kTensor, key);
  const ArchiveRegion* r1 = a->Find(RegionKind::kTensor, (*file)->entries()[1].key);
  REQUIRE((r0 != nullptr && r1 != nullptr));
  WriteFile(dir.File("bad.zst"), RedirectRegion(ReadFile(dir.File("a.zst")), *r0, *r1));
  const std::string etpack = std::string("'") + bin + "'";
  CHECK(!Run(etpack + " decompress '" + dir.File("bad.zst") + "' --tensor '" + key + "' -o '" +
             dir.File("t.bin") + "' 2> '" + dir.File("err.txt") + "'"));
  CHECK(!std::filesystem::exists(dir.File("t.bin")));
  const std::vector<uint8_t> err = ReadFile(dir.File("err.txt"));
  const std::string text(err.begin(), err.end());
  INFO(text);
  CHECK(Contains(text, "tensor '" + key + "'"));
  // The whole file needs no index and still decompresses.
  CHECK(Run(etpack + " decompress '" + dir.File("bad.zst") + "' -o '" + dir.File("w.ptd") +
            "' > /dev/null"));
  CHECK(ReadFile(dir.File("w.ptd")) == ReadFile(ptd));
}

}  // namespace
}  // namespace etpack
