// Shared extents (OutputOptions::share_extents). Cases tagged [xfs] need a
// file system that shares them: meson runs them under scripts/with_xfs.sh,
// which mounts a scratch XFS image (reflink=1) at $ETPACK_XFS_DIR; without
// one the binary says why and exits 77 (meson: skipped; the tests' main,
// test/support/catch_main.cc, does this). The other cases run where the
// tests run ($TMPDIR: ext4 or tmpfs), where nothing is shared and the bytes
// are the same.
#include "catch.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "etpack/input.h"
#include "etpack/json.h"
#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "plan/content_groups.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr uint64_t kBlock = 4096;

// The scratch XFS, or "" where there is none.
std::string XfsDir() {
  const char* dir = std::getenv("ETPACK_XFS_DIR");
  return dir != nullptr ? dir : "";
}

// A directory for one case: under the XFS mount for [xfs] cases, else a
// fresh $TMPDIR folder.
struct CaseDir {
  explicit CaseDir(bool xfs) {
    if (!xfs) {
      dir = std::make_unique<TempDir>();
      return;
    }
    REQUIRE(!XfsDir().empty());
    // TempDir makes its folder under $TMPDIR, which the other tests of this
    // binary read too: it points at the XFS only while the folder is made.
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("TMPDIR", XfsDir().c_str(), 1);
    dir = std::make_unique<TempDir>();
    if (old != nullptr) {
      ::setenv("TMPDIR", saved.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  std::string File(const std::string& name) const { return dir->File(name); }
  std::unique_ptr<TempDir> dir;
};

// One write of `length` source bytes from `src_offset` of a file to
// `dst_offset` of a `file_size`-byte output; the file's bytes after the
// range are `after` (0: zeros, else a pattern). Returns the output's
// bytes_shared() and checks the output's bytes.
uint64_t WriteOne(const CaseDir& dir, uint64_t src_offset, uint64_t length, uint64_t dst_offset,
                  uint64_t file_size, bool zeros_after) {
  std::vector<uint8_t> src = PatternBytes(src_offset + length + 3 * kBlock, 7);
  if (zeros_after) std::fill(src.begin() + src_offset + length, src.end(), 0);
  WriteFile(dir.File("src.bin"), src);
  Result<SourcePtr> source = FileSource(dir.File("src.bin"), src_offset, length);
  REQUIRE(source.ok());
  std::unique_ptr<OutputFs> fs = NewPosixOutputFs();
  Result<std::unique_ptr<OutputFile>> out = fs->Create(dir.File("out.bin"));
  REQUIRE(out.ok());
  REQUIRE((*out)->Reserve(file_size).ok());
  REQUIRE((*out)->Write(dst_offset, **source).ok());
  const uint64_t shared = (*out)->bytes_shared();
  std::vector<std::unique_ptr<OutputFile>> unit;
  unit.push_back(std::move(*out));
  REQUIRE(Publish(std::move(unit)).ok());
  std::vector<uint8_t> want(file_size, 0);
  std::memcpy(want.data() + dst_offset, src.data() + src_offset, length);
  CHECK(ReadFile(dir.File("out.bin")) == want);
  return shared;
}

TEST_CASE("without shared extents every byte is copied and the same", "[reflink]") {
  CaseDir dir(false);
  CHECK(WriteOne(dir, kBlock + 100, 3 * kBlock + 50, 100, 8 * kBlock, false) == 0);
  CHECK(WriteOne(dir, kBlock, 3 * kBlock + 50, 0, 8 * kBlock, true) == 0);
}

TEST_CASE("whole blocks at the same offset modulo the block are shared", "[xfs]") {
  CaseDir dir(true);
  // head 3996 bytes and tail 246 copied, two blocks between shared
  CHECK(WriteOne(dir, kBlock + 100, 3 * kBlock + 50, 100, 8 * kBlock, false) == 2 * kBlock);
  // an item that starts on a block: every whole block
  CHECK(WriteOne(dir, 2 * kBlock, 5 * kBlock, kBlock, 8 * kBlock, false) == 5 * kBlock);
  // offsets that differ modulo the block: nothing can be shared
  CHECK(WriteOne(dir, kBlock + 100, 3 * kBlock + 50, 200, 8 * kBlock, false) == 0);
  // shorter than a block once aligned: nothing
  CHECK(WriteOne(dir, 100, kBlock, 100, 4 * kBlock, false) == 0);
  // shorter than a block, but padded with zeros to its end: that block
  CHECK(WriteOne(dir, kBlock, 100, kBlock, 4 * kBlock, true) == 100);
}

TEST_CASE("a last partial block the source pads with zeros is shared too", "[xfs]") {
  CaseDir dir(true);
  CHECK(WriteOne(dir, kBlock, 3 * kBlock + 50, 0, 8 * kBlock, true) == 3 * kBlock + 50);
  // ... but not past the end of the output, nor where the source goes on
  CHECK(WriteOne(dir, kBlock, 3 * kBlock + 50, 0, 3 * kBlock + 50, true) == 3 * kBlock);
  CHECK(WriteOne(dir, kBlock, 3 * kBlock + 50, 0, 8 * kBlock, false) == 3 * kBlock);
}

TEST_CASE("a write after a shared padded block lands on it", "[xfs]") {
  CaseDir dir(true);
  std::vector<uint8_t> src = PatternBytes(4 * kBlock, 3);
  std::fill(src.begin() + kBlock + 10, src.begin() + 2 * kBlock, 0);  // item 1 ends at +10
  WriteFile(dir.File("src.bin"), src);
  Result<SourcePtr> a = FileSource(dir.File("src.bin"), 0, kBlock + 10);
  Result<SourcePtr> b = FileSource(dir.File("src.bin"), 2 * kBlock, 100);
  REQUIRE((a.ok() && b.ok()));
  ArtifactPlan plan;
  plan.file_size = 3 * kBlock;
  plan.placements.push_back({0, kBlock, *a});
  plan.placements.push_back({kBlock + 16, 16, *b});  // inside the shared padded block
  WriteStats stats;
  WriteOptions options;
  options.stats = &stats;
  REQUIRE(WriteArtifactFile(dir.File("out.bin"), plan, options).ok());
  std::vector<uint8_t> want(3 * kBlock, 0);
  std::memcpy(want.data(), src.data(), kBlock + 10);
  std::memcpy(want.data() + kBlock + 16, src.data() + 2 * kBlock, 100);
  CHECK(ReadFile(dir.File("out.bin")) == want);
  CHECK(stats.bytes == kBlock + 10 + 100);
  CHECK(stats.bytes_shared == kBlock + 10);
  CHECK(stats.bytes_copied() == 100);
}

// `etpack ARGS`, its standard output returned (standard error passes
// through); REQUIREs exit status 0.
std::string Etpack(const std::string& args) {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  const std::string command = std::string(bin) + " " + args;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  const int status = ::pclose(p);
  INFO(command << "\n" << text);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return text;
}

// What a writing command's --json report says: {bytes_written, bytes_shared,
// bytes_copied}.
struct Report {
  uint64_t written = 0, shared = 0, copied = 0;
};
Report JsonReport(const std::string& text) {
  INFO(text);
  Result<json::Value> v = json::Parse(text);
  REQUIRE(v.ok());
  Report r;
  r.written = v->Find("bytes_written")->as_uint();
  r.shared = v->Find("bytes_shared")->as_uint();
  r.copied = v->Find("bytes_copied")->as_uint();
  CHECK(r.shared + r.copied == r.written);
  return r;
}

// The demo program repacked to the reflink-friendly layout (a), that
// repacked again (b), bundled (b.bpte) and unbundled (u): the same bytes
// wherever they are written.
struct Chain {
  explicit Chain(bool xfs) : dir(xfs) {
    const std::string d = dir.dir->path() + "/";
    Etpack("demo --size 6MiB -o " + dir.dir->path());
    WriteFile(d + "cases.json",
              std::string(R"({"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "LONG", )"
                          R"("sizes": [1, 64], "base64": ")") +
                  std::string(683, 'A') + "=\"}}]}]}}");
    a = JsonReport(Etpack("repack " + d + "demo.pte -o " + d + "a.pte --align 4096 --json"));
    b = JsonReport(Etpack("repack " + d + "a.pte -o " + d + "b.pte --align 4096 --json"));
    bundled = JsonReport(Etpack("bundle " + d + "b.pte --cases " + d + "cases.json -o " + d +
                                "b.bpte --layout segmented --program-alignment 4096 --json"));
    unbundled = JsonReport(Etpack("unbundle " + d + "b.bpte -o " + d + "u.pte --json"));
    text = Etpack("repack " + d + "a.pte -o " + d + "t.pte --align 4096");
  }
  CaseDir dir;
  Report a, b, bundled, unbundled;
  std::string text;
};

TEST_CASE("without shared extents the commands report every byte copied", "[reflink]") {
  Chain plain(false);
  for (const Report* r : {&plain.a, &plain.b, &plain.bundled, &plain.unbundled}) {
    CHECK(r->shared == 0);
    CHECK(r->copied > 6u << 20);
  }
  CHECK(testing::Contains(plain.text,
                          "shared:  0 of " + std::to_string(plain.b.written) + " bytes written"));
}

TEST_CASE("--align is bounded like --constant-alignment, --json refuses --digest", "[reflink]") {
  CaseDir dir(false);
  const std::string d = dir.dir->path() + "/";
  Etpack("demo --size 4MiB -o " + dir.dir->path());
  const std::string bin = std::getenv("ETPACK_BIN");
  auto exit_of = [&](const std::string& args) {
    const int status = std::system((bin + " " + args + " >/dev/null 2>&1").c_str());
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };
  CHECK(exit_of("repack " + d + "demo.pte -o " + d + "a.pte --align 128KiB") == 2);
  CHECK(exit_of("repack " + d + "demo.pte -o " + d + "a.pte --align 64KiB") == 0);
  CHECK(exit_of("repack " + d + "demo.pte -o " + d + "b.pte --json --digest sha256") == 1);
  CHECK(dir.dir->List().count("b.pte") == 0);
}

TEST_CASE("the commands share what they can and write the same bytes", "[xfs]") {
  Chain xfs(true);
  Chain plain(false);
  for (const char* name : {"a.pte", "b.pte", "b.bpte", "u.pte"}) {
    CAPTURE(name);
    CHECK(ReadFile(xfs.dir.File(name)) == ReadFile(plain.dir.File(name)));
  }
  const uint64_t size = ReadFile(xfs.dir.File("b.pte")).size();
  // a.pte and b.pte have the same layout: every constant shared, the
  // small ones too (each fills its block with zeros); only the head, which
  // is rebuilt (77 KiB for this demo), copied
  CHECK(xfs.b.copied < 96 * 1024);
  CHECK(xfs.b.shared > xfs.b.written - 96 * 1024);
  // the program as a whole into the bundle, and out of it again: all but
  // its last partial block (the kernel shares a block that ends a file
  // only at the end of the other file too)
  CHECK(xfs.bundled.shared >= size / kBlock * kBlock);
  CHECK(xfs.unbundled.shared >= size / kBlock * kBlock);
  // the first repack moves the demo's 16-aligned constants onto blocks
  CHECK(xfs.a.shared < xfs.a.written / 2);
}

// Where the bytes of [offset, offset + n) of `path` lie.
PhysicalExtents ExtentsOfFile(const std::string& path, uint64_t offset, uint64_t n) {
  Result<std::shared_ptr<const InputFile>> f = DefaultInputFs()->Open(path);
  REQUIRE(f.ok());
  return (*f)->Extents(offset, n);
}

// `to` as a copy of `from` that shares all its blocks (FICLONE).
void Clone(const std::string& from, const std::string& to) {
  const int src = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  const int dst = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE((src >= 0 && dst >= 0));
  CHECK(::ioctl(dst, FICLONE, src) == 0);
  ::close(src);
  ::close(dst);
}

TEST_CASE("extents: where blocks are never shared between files, no map is trusted", "[reflink]") {
  // $TMPDIR here is ext4 or tmpfs: FIEMAP may answer, but equal block
  // numbers are only taken for equal bytes on XFS and btrfs.
  CaseDir dir(false);
  WriteFile(dir.File("a.bin"), PatternBytes(8 * kBlock, 1));
  struct statfs fs;
  REQUIRE(::statfs(dir.File("a.bin").c_str(), &fs) == 0);
  const auto type = static_cast<unsigned long>(fs.f_type);
  if (type == XFS_SUPER_MAGIC || type == BTRFS_SUPER_MAGIC) return;  // a sharing $TMPDIR
  CHECK_FALSE(ExtentsOfFile(dir.File("a.bin"), kBlock + 5, 3 * kBlock).known());
}

TEST_CASE("extents: a range's map is its own, another file's is not, a hole is unknown", "[xfs]") {
  CaseDir dir(true);
  WriteFile(dir.File("a.bin"), PatternBytes(8 * kBlock, 1));
  WriteFile(dir.File("b.bin"), PatternBytes(8 * kBlock, 1));
  const PhysicalExtents a = ExtentsOfFile(dir.File("a.bin"), kBlock + 5, 3 * kBlock);
  REQUIRE(a.known());
  uint64_t mapped = 0;
  for (const auto& [physical, n] : a.runs) mapped += n;
  CHECK(mapped == 3 * kBlock);
  CHECK(ExtentsOfFile(dir.File("a.bin"), kBlock + 5, 3 * kBlock) == a);
  CHECK_FALSE(ExtentsOfFile(dir.File("b.bin"), kBlock + 5, 3 * kBlock) == a);
  CHECK_FALSE(ExtentsOfFile(dir.File("a.bin"), kBlock + 6, 3 * kBlock) == a);
  CHECK_FALSE(ExtentsOfFile(dir.File("a.bin"), 7 * kBlock, 2 * kBlock).known());  // past the end
  // A file with a hole in the middle.
  {
    const int fd = ::open(dir.File("sparse.bin").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    const std::vector<uint8_t> block = PatternBytes(kBlock, 2);
    CHECK(::pwrite(fd, block.data(), kBlock, 0) == static_cast<ssize_t>(kBlock));
    CHECK(::pwrite(fd, block.data(), kBlock, 64 * kBlock) == static_cast<ssize_t>(kBlock));
    ::close(fd);
  }
  CHECK(ExtentsOfFile(dir.File("sparse.bin"), 0, kBlock).known());
  CHECK_FALSE(ExtentsOfFile(dir.File("sparse.bin"), 0, 65 * kBlock).known());
}

TEST_CASE("items on shared blocks are grouped by their maps, unread", "[xfs]") {
  CaseDir dir(true);
  const uint64_t size = 512 * kBlock;  // 2 MiB: large enough to be mapped
  std::vector<uint8_t> bytes = PatternBytes(size + kBlock, 3);
  WriteFile(dir.File("a.bin"), bytes);
  Clone(dir.File("a.bin"), dir.File("b.bin"));  // every block shared
  bytes[size / 3] ^= 1;
  WriteFile(dir.File("c.bin"), bytes);  // the same size, other bytes
  Clone(dir.File("a.bin"), dir.File("d.bin"));
  {
    // d: one block rewritten with the same bytes, so its map differs from
    // a's there: compared by reading.
    const int fd = ::open(dir.File("d.bin").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const std::vector<uint8_t> same = PatternBytes(size + kBlock, 3);
    CHECK(::pwrite(fd, same.data() + kBlock, kBlock, kBlock) == static_cast<ssize_t>(kBlock));
    ::close(fd);
  }
  const PhysicalExtents a = ExtentsOfFile(dir.File("a.bin"), kBlock, size);
  REQUIRE(a.known());
  CHECK(ExtentsOfFile(dir.File("b.bin"), kBlock, size) == a);
  CHECK_FALSE(ExtentsOfFile(dir.File("d.bin"), kBlock, size) == a);
  std::vector<SourcePtr> sources;
  for (const char* name : {"a.bin", "b.bin", "c.bin", "d.bin"}) {
    Result<SourcePtr> s = FileSource(dir.File(name), kBlock, size);
    REQUIRE(s.ok());
    sources.push_back(*s);
  }
  Result<ContentGroups> g = GroupByContent(sources);
  REQUIRE(g.ok());
  CHECK(g->content_of == std::vector<size_t>{0, 0, 1, 0});
  CHECK(g->bytes_by_extents == size);    // b
  CHECK(g->bytes_compared == 3 * size);  // a, c and d read once each
}

}  // namespace
}  // namespace etpack
