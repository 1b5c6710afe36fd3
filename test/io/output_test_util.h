// Helpers shared by the tests of the output seam: a set of writes with the
// file they must produce, and one-line ways to create and publish outputs.
#ifndef ETPACK_TEST_OUTPUT_TEST_UTIL_H_
#define ETPACK_TEST_OUTPUT_TEST_UTIL_H_

#include <unistd.h>
#include "catch.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "test_files.h"

namespace etpack::testing {

inline uint64_t Page() { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }

inline std::unique_ptr<OutputFile> Open(OutputFs& fs, const std::string& path) {
  auto out = fs.Create(path);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return std::move(*out);
}

inline Status PublishOne(std::unique_ptr<OutputFile> out) {
  std::vector<std::unique_ptr<OutputFile>> outputs;
  outputs.push_back(std::move(out));
  return Publish(std::move(outputs));
}

// Reserves bytes.size() and writes `bytes` at 0: the whole file.
inline Status Fill(OutputFile& out, const std::vector<uint8_t>& bytes) {
  ETPACK_RETURN_IF_ERROR(out.Reserve(bytes.size()));
  return out.Write(0, bytes.data(), bytes.size());
}

// A set of writes and the file they must produce.
struct Job {
  uint64_t size = 0;
  std::vector<std::pair<uint64_t, SourcePtr>> writes;
  std::vector<uint8_t> expected;

  // The end of the last write.
  uint64_t Frontier() const {
    return writes.empty() ? 0 : writes.back().first + writes.back().second->size();
  }
};

inline Status Run(const Job& job, OutputFile& out) {
  ETPACK_RETURN_IF_ERROR(out.Reserve(job.size));
  for (const auto& [offset, source] : job.writes) {
    ETPACK_RETURN_IF_ERROR(out.Write(offset, *source));
  }
  return Status::OK();
}

// Writes from every kind of source, unaligned, spanning page-sized windows,
// with gaps that must read back as zero. `data` is a file holding `bytes`.
inline Job MixedJob(const std::string& data, const std::vector<uint8_t>& bytes) {
  const uint64_t page = Page();
  Job job;
  job.size = 12 * page + 123;
  job.expected.assign(job.size, 0);
  auto put = [&](uint64_t offset, SourcePtr s, const uint8_t* content) {
    std::memcpy(job.expected.data() + offset, content, s->size());
    job.writes.emplace_back(offset, std::move(s));
  };
  static const std::vector<uint8_t> head = PatternBytes(100, 7);
  put(0, MemorySource(head.data(), head.size()), head.data());
  // Memory, across three window boundaries.
  static const std::vector<uint8_t> mem = PatternBytes(3 * page + 17, 8);
  put(200, MemorySource(mem.data(), mem.size()), mem.data());
  // File range, unaligned at both ends.
  auto file = FileSource(data, page + 3, 2 * page + 5);
  REQUIRE(file.ok());
  put(4 * page + 64, *file, bytes.data() + page + 3);
  // Generator, straight after.
  const uint64_t gen_at = 4 * page + 64 + 2 * page + 5;
  static const std::vector<uint8_t> gen = PatternBytes(page + 1, 9);
  put(gen_at,
      GeneratorSource("g", gen.size(),
                      [](uint64_t o, uint8_t* d, size_t n) {
                        std::memcpy(d, gen.data() + o, n);
                        return Status::OK();
                      }),
      gen.data());
  // The whole file, ending 5 bytes before the end of the output.
  auto whole = FileSource(data);
  REQUIRE(whole.ok());
  put(job.size - 5 - bytes.size(), *whole, bytes.data());
  return job;
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_OUTPUT_TEST_UTIL_H_
