// Shared by the libFuzzer targets: the fuzzer's bytes in the form each entry
// point takes (aligned memory, or a file in a scratch folder).
//
// Every target defines LLVMFuzzerTestOneInput and calls exactly one public
// entry point; replay_test.cc links the same file to replay regressions.

#ifndef ETPACK_TEST_FUZZ_FUZZ_INPUT_H_
#define ETPACK_TEST_FUZZ_FUZZ_INPUT_H_

#include <stdlib.h>  // mkdtemp

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace etpack::fuzz {

// A copy of the input in a block of exactly its size, so AddressSanitizer
// catches a read one byte past the end. malloc aligns to 16 bytes on the
// platforms we fuzz on, as the readers' FromMemory requires; checked.
inline std::shared_ptr<uint8_t> ExactCopy(const uint8_t* data, size_t size) {
  void* p = std::malloc(size > 0 ? size : 1);
  if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 != 0) std::abort();
  if (size > 0) std::memcpy(p, data, size);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

// One scratch folder per process, made on first use and removed at exit,
// holding the input written as a file and any files inputs may name by
// relative path.
class Scratch {
 public:
  static Scratch& Get() {
    static Scratch s;
    return s;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Writes `name` in the folder, replacing it. Aborts on I/O errors: they
  // are the harness's, not the parser's.
  std::string Write(const std::string& name, const uint8_t* data, size_t size) const {
    const std::string path = Path(name);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) std::abort();
    const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
    if (std::fclose(f) != 0 || !ok) std::abort();
    return path;
  }
  std::string Write(const std::string& name, const std::string& bytes) const {
    return Write(name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }

 private:
  Scratch() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/etpack-fuzz-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
  }
  std::string dir_;
};

// A valid v1.0 .npy file: float32, shape (2,), values 1 and 2.
inline std::string SmallNpy() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const float values[2] = {1.0f, 2.0f};
  out.append(reinterpret_cast<const char*>(values), sizeof(values));
  return out;
}

// A valid .safetensors file with one F32 tensor "w" of shape [2].
inline std::string SmallSafetensors() {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  const float values[2] = {1.0f, 2.0f};
  out.append(reinterpret_cast<const char*>(values), sizeof(values));
  return out;
}

}  // namespace etpack::fuzz

#endif  // ETPACK_TEST_FUZZ_FUZZ_INPUT_H_
