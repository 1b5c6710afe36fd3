// memory_input.h (test support) — an input file system whose files exist
// only in memory, to prove that an entry point given an Env (etpack/env.h)
// opens every path through it: a file never written to disk can only be
// found there.

#ifndef ETPACK_TEST_MEMORY_INPUT_H_
#define ETPACK_TEST_MEMORY_INPUT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "etpack/input.h"

namespace etpack {

// Files by path, exactly as given (no normalization). Each open file also
// has a descriptor (a memfd holding the same bytes), as InputFile::fd()
// promises; reads come from memory. Thread-safe.
class MemoryInputFs final : public InputFs {
 public:
  void Add(const std::string& path, std::vector<uint8_t> bytes);
  void Add(const std::string& path, const std::string& bytes);

  // Paths opened so far, in order (one per Open, repeats kept).
  std::vector<std::string> opened() const;

  // kNotFound naming the path for a file not added.
  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const std::vector<uint8_t>>> files_;
  std::vector<std::string> opened_;
};

}  // namespace etpack

#endif  // ETPACK_TEST_MEMORY_INPUT_H_
