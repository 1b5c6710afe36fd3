// gen_weights OUT.ptd --dtype bf16|f16|int8|random --size BYTES
// gen_weights OUT.pte --methods N
//
// Writes a synthetic .ptd for the `compress` job of scripts/bench.sh:
// weight-like tensors (normally distributed values, sigma 0.02, as trained
// linear layers roughly are; int8 as symmetric quantisation of the same)
// or uniformly random bytes, in layers of three large matrices and one
// small norm vector. Deterministic: every byte is a function of its tensor
// and offset, so the same command writes the same file.
//
// --methods N writes instead a .pte of N small methods (each 8 planned
// float[4, 4] tensors and 4 kernel calls of one operator), the program of
// the `plan` job's repack check.

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "etpack/program_builder.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/tensor_layout.h"

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// An approximately normal value (sum of four uniforms) from 64 random bits.
float Normal(uint64_t r, float sigma) {
  float s = 0;
  for (int i = 0; i < 4; ++i) s += static_cast<float>((r >> (16 * i)) & 0xffff) / 65536.0f;
  return (s - 2.0f) * 1.7320508f * sigma;
}

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

uint16_t ToF16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const float a = std::fabs(f);
  if (a < 6.1035156e-05f) return sign | static_cast<uint16_t>(std::lrint(a / 5.9604645e-08f));
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const uint32_t mant = static_cast<uint32_t>(std::lrint((m * 2 - 1) * 1024));
  return sign | static_cast<uint16_t>(((e + 14) << 10) + mant);  // a carry rounds up the exponent
}

enum class Kind { kBf16, kF16, kInt8, kRandom };

// The byte at `pos` of tensor `t`: elements are drawn from their index.
void Fill(Kind kind, uint64_t t, uint64_t pos, uint8_t* dst, size_t n) {
  const uint64_t width = kind == Kind::kBf16 || kind == Kind::kF16 ? 2 : 1;
  for (size_t i = 0; i < n;) {
    const uint64_t at = pos + i;
    const uint64_t element = at / width;
    const uint64_t r = Mix(t * 0x100000001B3ull ^ (kind == Kind::kRandom ? at / 8 : element));
    uint8_t bytes[8];
    size_t have = 1;
    uint64_t first = at;  // the file position of bytes[0]
    switch (kind) {
      case Kind::kBf16:
      case Kind::kF16: {
        const uint16_t v = kind == Kind::kBf16 ? ToBf16(Normal(r, 0.02f)) : ToF16(Normal(r, 0.02f));
        bytes[0] = static_cast<uint8_t>(v);
        bytes[1] = static_cast<uint8_t>(v >> 8);
        have = 2;
        first = element * 2;
        break;
      }
      case Kind::kInt8: {
        const long q = std::lrint(Normal(r, 0.02f) / 0.02f * 32.0f);
        bytes[0] = static_cast<uint8_t>(static_cast<int8_t>(q < -127 ? -127 : q > 127 ? 127 : q));
        have = 1;
        first = at;
        break;
      }
      case Kind::kRandom:
        std::memcpy(bytes, &r, 8);
        have = 8;
        first = at / 8 * 8;
        break;
    }
    const size_t skip = static_cast<size_t>(at - first);
    const size_t take = std::min(have - skip, n - i);
    std::memcpy(dst + i, bytes + skip, take);
    i += take;
  }
}

int Methods(const char* path, const char* count) {
  using namespace etpack;
  const long n = std::strtol(count, nullptr, 10);
  if (n < 1) {
    std::fprintf(stderr, "gen_weights: --methods %s is not a positive count\n", count);
    return 2;
  }
  ProgramBuilder program;
  for (long m = 0; m < n; ++m) {
    MethodBuilder& method = program.AddMethod("method_" + std::to_string(m));
    std::vector<int32_t> t;
    for (int i = 0; i < 8; ++i) t.push_back(method.PlannedTensor({6, {4, 4}, {}}, 1, 64 * i));
    const int32_t add = method.Operator("aten::add", "out");
    const int32_t one = method.Int(1);
    for (int k = 0; k < 4; ++k) method.KernelCall(add, {t[k], t[k + 4], one, t[k], t[k]});
    method.SetInputs({t[0], t[4]});
    method.SetOutputs({t[0]});
    method.SetNonConstBufferSizes({0, 512});
  }
  PteInput input;
  input.program = std::move(program).Build();
  Status s = WritePte(path, std::move(input));
  if (!s.ok()) {
    std::fprintf(stderr, "gen_weights: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("%s: %ld methods\n", path, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace etpack;
  if (argc == 4 && std::strcmp(argv[2], "--methods") == 0) return Methods(argv[1], argv[3]);
  if (argc != 6 || std::strcmp(argv[2], "--dtype") || std::strcmp(argv[4], "--size")) {
    std::fprintf(stderr,
                 "usage: gen_weights OUT.ptd --dtype bf16|f16|int8|random --size BYTES\n"
                 "       gen_weights OUT.pte --methods N\n");
    return 2;
  }
  const std::string name = argv[3];
  Kind kind;
  int scalar_type;
  if (name == "bf16") {
    kind = Kind::kBf16, scalar_type = dtype::kBFloat16;
  } else if (name == "f16") {
    kind = Kind::kF16, scalar_type = dtype::kHalf;
  } else if (name == "int8") {
    kind = Kind::kInt8, scalar_type = dtype::kChar;
  } else if (name == "random") {
    kind = Kind::kRandom, scalar_type = dtype::kByte;
  } else {
    std::fprintf(stderr, "gen_weights: unknown dtype '%s'\n", name.c_str());
    return 2;
  }
  const uint64_t total = std::strtoull(argv[5], nullptr, 10);
  const int32_t width = 4096;
  const int64_t element = kind == Kind::kBf16 || kind == Kind::kF16 ? 2 : 1;
  // Each layer: three matrices of `rows` x 4096 and a 4096-element norm.
  const int32_t rows = 1024;
  const uint64_t layer = 3 * uint64_t{rows} * width * element + width * element;
  const uint64_t layers = std::max<uint64_t>(1, total / layer);
  PtdInput input;
  for (uint64_t l = 0; l < layers; ++l) {
    for (int m = 0; m < 4; ++m) {
      const bool norm = m == 3;
      TensorLayout layout{scalar_type,
                          norm ? std::vector<int32_t>{width} : std::vector<int32_t>{rows, width},
                          norm ? std::vector<uint8_t>{0} : std::vector<uint8_t>{0, 1}};
      const uint64_t bytes = (norm ? 1 : uint64_t{rows}) * width * element;
      const uint64_t t = input.buffers.size();
      input.buffers.push_back(GeneratorSource("t" + std::to_string(t), bytes,
                                              [kind, t](uint64_t off, uint8_t* dst, size_t n) {
                                                Fill(kind, t, off, dst, n);
                                                return Status::OK();
                                              }));
      const char* names[] = {"wq", "wk", "wv", "norm"};
      input.entries.push_back(
          {"layers." + std::to_string(l) + "." + names[m], static_cast<uint32_t>(t), 16, layout});
    }
  }
  Status s = WritePtd(argv[1], input).status();
  if (!s.ok()) {
    std::fprintf(stderr, "gen_weights: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("%s: %" PRIu64 " layers, %" PRIu64 " tensors\n", argv[1], layers, layers * 4);
  return 0;
}
