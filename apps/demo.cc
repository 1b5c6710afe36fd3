// `etpack demo`: writes an LLM-shaped program whose weights are generated
// on the fly, reads it back, and reports layout, speed and memory. It shows
// the point of the library: the output can be far larger than RAM because
// no weight is ever held in memory, only produced while it is written.

#include <sys/resource.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/path_text.h"
#include "etpack/program_builder.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/tensor_layout.h"
#include "etpack/writer.h"
#include "write_job.h"

namespace etpack::cli {
namespace {

constexpr int kLong = dtype::kLong;
constexpr int kFloat = dtype::kFloat;
constexpr int kBFloat16 = dtype::kBFloat16;

constexpr uint64_t kDefaultSize = uint64_t{512} << 20;
// Also keeps every tensor dimension far below the schema's int32 limit.
constexpr uint64_t kMaxSize = uint64_t{1} << 40;
constexpr int64_t kSeqLen = 64;  // planned activations' sequence length
constexpr int64_t kHeadDim = 64;

// A llama-style decoder. Everything is derived from dim, layers and vocab.
struct Config {
  int64_t dim = 0;
  int64_t layers = 0;
  int64_t vocab = 0;
  int64_t heads() const { return dim / kHeadDim; }
  // Grouped-query attention: about a quarter as many kv heads, dividing heads.
  int64_t kv_heads() const {
    int64_t kv = std::max<int64_t>(1, heads() / 4);
    while (heads() % kv != 0) --kv;
    return kv;
  }
  int64_t kv_dim() const { return kv_heads() * kHeadDim; }
  int64_t hidden() const { return (dim * 8 / 3 + 63) / 64 * 64; }
};

// Vocabulary before the final fill-up: small models get a small one so the
// embedding does not dwarf the layers.
int64_t BaseVocab(int64_t dim) { return std::min<int64_t>(32000, 8 * dim); }

struct Weight {
  std::string name;
  std::vector<int64_t> sizes;
  int scalar_type = kBFloat16;
  uint64_t bytes = 0;
};

std::vector<Weight> Weights(const Config& c) {
  std::vector<Weight> w;
  auto add = [&w](std::string name, std::vector<int64_t> sizes, int type) {
    uint64_t bytes = type == kFloat ? 4 : 2;
    for (int64_t s : sizes) bytes *= static_cast<uint64_t>(s);
    w.push_back({std::move(name), std::move(sizes), type, bytes});
  };
  add("tok_embeddings.weight", {c.vocab, c.dim}, kBFloat16);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "attention_norm.weight", {c.dim}, kFloat);
    add(p + "attention.wq.weight", {c.dim, c.dim}, kBFloat16);
    add(p + "attention.wk.weight", {c.kv_dim(), c.dim}, kBFloat16);
    add(p + "attention.wv.weight", {c.kv_dim(), c.dim}, kBFloat16);
    add(p + "attention.wo.weight", {c.dim, c.dim}, kBFloat16);
    add(p + "ffn_norm.weight", {c.dim}, kFloat);
    add(p + "feed_forward.w1.weight", {c.hidden(), c.dim}, kBFloat16);  // gate
    add(p + "feed_forward.w3.weight", {c.hidden(), c.dim}, kBFloat16);  // up
    add(p + "feed_forward.w2.weight", {c.dim, c.hidden()}, kBFloat16);  // down
  }
  add("norm.weight", {c.dim}, kFloat);
  add("output.weight", {c.vocab, c.dim}, kBFloat16);
  return w;
}

uint64_t TotalBytes(const Config& c) {
  // Closed form of Weights(c); used in the search so it stays cheap.
  const auto d = static_cast<uint64_t>(c.dim), kv = static_cast<uint64_t>(c.kv_dim()),
             h = static_cast<uint64_t>(c.hidden()), v = static_cast<uint64_t>(c.vocab),
             l = static_cast<uint64_t>(c.layers);
  const uint64_t per_layer = 2 * (2 * d * d + 2 * kv * d + 3 * h * d) + 2 * 4 * d;
  return 2 * 2 * v * d + 4 * d + l * per_layer;
}

// The largest model whose weights fit in `target`, with at least 16 layers
// (more for bigger models, as real ones have): widest dim first (multiples
// of 64, of 256 from 1024 on), then as many layers as still fit, then extra vocabulary rows to
// close most of the remaining gap.
Result<Config> ChooseConfig(uint64_t target) {
  const int64_t min_layers = target < (uint64_t{256} << 20) ? 16
                             : target < (uint64_t{2} << 30) ? 24
                                                            : 32;
  Config c;
  c.dim = 64;
  c.layers = min_layers;
  c.vocab = BaseVocab(c.dim);
  if (TotalBytes(c) > target) {
    return InvalidArgument("--size " + BytesText(target) + " is below the smallest demo model (" +
                           BytesText(TotalBytes(c)) + ")");
  }
  for (;;) {
    Config wider = c;
    wider.dim += c.dim < 1024 ? 64 : 256;  // wide models: head counts divisible by 4
    wider.vocab = BaseVocab(wider.dim);
    if (TotalBytes(wider) > target) break;
    c = wider;
  }
  Config one_layer = c;
  one_layer.layers = 1;
  Config no_layer = c;
  no_layer.layers = 0;
  const uint64_t per_layer = TotalBytes(one_layer) - TotalBytes(no_layer);
  c.layers = static_cast<int64_t>((target - TotalBytes(no_layer)) / per_layer);
  c.vocab += static_cast<int64_t>((target - TotalBytes(c)) / (4 * static_cast<uint64_t>(c.dim)));
  return c;
}

// ------------------------------------------------------------- content

// splitmix64's finaliser: a well-mixed function of a counter, so any byte
// of any tensor can be produced independently and in any order.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

struct Pattern {
  uint64_t key;   // per tensor
  uint64_t mask;  // clears the top exponent bit of every element: finite values below 2
};

Pattern PatternFor(uint64_t tensor_index, int scalar_type) {
  return {Mix(tensor_index + 1),
          scalar_type == kFloat ? 0xBFFFFFFFBFFFFFFFULL : 0xBFFFBFFFBFFFBFFFULL};
}

// Bytes [32b, 32b + 32) of a tensor. One hash per 32 bytes, stretched by
// rotations, keeps generation several times faster than the disk.
inline void Block(uint64_t key, uint64_t mask, uint64_t b, uint8_t* dst) {
  const uint64_t h = Mix(key + b * 0x9e3779b97f4a7c15ULL);
  const uint64_t w[4] = {h & mask, (Rotl(h, 16) ^ 0x5851f42d4c957f2dULL) & mask,
                         (Rotl(h, 32) ^ 0x14057b7ef767814fULL) & mask,
                         (Rotl(h, 48) ^ 0xd1342543de82ef95ULL) & mask};
  // Word by word: a 32-byte copy from a stack array stalls store forwarding.
  std::memcpy(dst, &w[0], 8);
  std::memcpy(dst + 8, &w[1], 8);
  std::memcpy(dst + 16, &w[2], 8);
  std::memcpy(dst + 24, &w[3], 8);
}

// Bytes [offset, offset + n) of the tensor.
void Fill(const Pattern& p, uint64_t offset, uint8_t* dst, size_t n) {
  // Locals, so the compiler need not reload them after every store to dst.
  const uint64_t key = p.key;
  const uint64_t mask = p.mask;
  uint64_t b = offset / 32;
  const size_t skip = static_cast<size_t>(offset % 32);
  uint8_t tmp[32];
  if (skip != 0 && n > 0) {
    Block(key, mask, b++, tmp);
    const size_t take = std::min(n, 32 - skip);
    std::memcpy(dst, tmp + skip, take);
    dst += take;
    n -= take;
  }
  for (; n >= 32; n -= 32, dst += 32) Block(key, mask, b++, dst);
  if (n > 0) {
    Block(key, mask, b, tmp);
    std::memcpy(dst, tmp, n);
  }
}

// ------------------------------------------------------------- program

TensorShape Shape(int scalar_type, const std::vector<int64_t>& sizes) {
  TensorShape shape{scalar_type, {}, {}};
  for (int64_t s : sizes) shape.sizes.push_back(static_cast<int32_t>(s));
  return shape;
}

struct Demo {
  Config config;
  std::vector<Weight> weights;
  int32_t first_weight_value = 0;  // values[first_weight_value + i] is weight i
  PteInput input;
};

Demo BuildDemo(const Config& config) {
  Demo demo;
  demo.config = config;
  demo.weights = Weights(config);
  const Config& c = config;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");

  // Planned activations, packed 16-aligned into memory arena 1.
  uint64_t arena = 0;
  auto planned = [&](int type, std::vector<int64_t> sizes) {
    uint64_t bytes = type == kLong ? 8 : 4;
    for (int64_t s : sizes) bytes *= static_cast<uint64_t>(s);
    const int32_t index = forward.PlannedTensor(Shape(type, sizes), 1, arena);
    arena = (arena + bytes + 15) / 16 * 16;
    return index;
  };
  const int32_t tokens = planned(kLong, {1, kSeqLen});
  const int32_t h = planned(kFloat, {1, kSeqLen, c.dim});
  const int32_t x = planned(kFloat, {1, kSeqLen, c.dim});
  const int32_t q = planned(kFloat, {1, kSeqLen, c.dim});
  const int32_t k = planned(kFloat, {1, kSeqLen, c.kv_dim()});
  const int32_t v = planned(kFloat, {1, kSeqLen, c.kv_dim()});
  const int32_t attn = planned(kFloat, {1, kSeqLen, c.dim});
  const int32_t gate = planned(kFloat, {1, kSeqLen, c.hidden()});
  const int32_t up = planned(kFloat, {1, kSeqLen, c.hidden()});
  const int32_t logits = planned(kFloat, {1, kSeqLen, c.vocab});

  const int32_t minus_one = forward.Int(-1);
  const int32_t one = forward.Int(1);
  const int32_t no = forward.Bool(false);
  const int32_t eps = forward.Double(1e-5);

  // Constant i + 1 is weight i (constant 0 is the empty placeholder).
  demo.input.constants.push_back(OwnedSource({}));
  for (size_t i = 0; i < demo.weights.size(); ++i) {
    const Weight& w = demo.weights[i];
    const int32_t index =
        forward.ConstantTensor(Shape(w.scalar_type, w.sizes), static_cast<uint32_t>(i + 1));
    if (i == 0) demo.first_weight_value = index;
    const Pattern pattern = PatternFor(i, w.scalar_type);
    demo.input.constants.push_back(
        GeneratorSource(w.name, w.bytes, [pattern](uint64_t off, uint8_t* dst, size_t n) {
          Fill(pattern, off, dst, n);
          return Status::OK();
        }));
  }
  auto weight = [&](size_t i) { return demo.first_weight_value + static_cast<int32_t>(i); };

  const int32_t embedding = forward.Operator("aten::embedding", "out");
  const int32_t rms_norm = forward.Operator("aten::rms_norm");
  const int32_t linear = forward.Operator("aten::linear", "out");
  const int32_t sdpa = forward.Operator("aten::scaled_dot_product_attention");
  const int32_t add = forward.Operator("aten::add", "out");
  const int32_t silu = forward.Operator("aten::silu", "out");
  const int32_t mul = forward.Operator("aten::mul", "out");
  size_t wi = 0;
  forward.KernelCall(embedding, {weight(wi++), tokens, minus_one, no, no, h, h});
  for (int64_t l = 0; l < c.layers; ++l) {
    forward.KernelCall(rms_norm, {h, weight(wi++), eps, x});
    forward.KernelCall(linear, {x, weight(wi++), q, q});
    forward.KernelCall(linear, {x, weight(wi++), k, k});
    forward.KernelCall(linear, {x, weight(wi++), v, v});
    forward.KernelCall(sdpa, {q, k, v, attn});
    forward.KernelCall(linear, {attn, weight(wi++), x, x});
    forward.KernelCall(add, {h, x, one, h, h});
    forward.KernelCall(rms_norm, {h, weight(wi++), eps, x});
    forward.KernelCall(linear, {x, weight(wi++), gate, gate});
    forward.KernelCall(silu, {gate, gate, gate});
    forward.KernelCall(linear, {x, weight(wi++), up, up});
    forward.KernelCall(mul, {gate, up, gate, gate});
    forward.KernelCall(linear, {gate, weight(wi++), x, x});
    forward.KernelCall(add, {h, x, one, h, h});
  }
  forward.KernelCall(rms_norm, {h, weight(wi++), eps, x});
  forward.KernelCall(linear, {x, weight(wi++), logits, logits});
  assert(wi == demo.weights.size() && "every weight is used once, in Weights() order");

  const char* kLeaf = R"({"type": null, "context": null, "children_spec": []})";
  const std::string inp_spec =
      std::string(R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": )"
                  R"([{"type": "builtins.tuple", "context": "null", "children_spec": [)") +
      kLeaf + R"(]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])";
  const std::string out_spec = std::string("[1, ") + kLeaf + "]";
  forward.SetContainerMeta(inp_spec, out_spec);
  forward.SetInputs({tokens});
  forward.SetOutputs({logits});
  forward.SetNonConstBufferSizes({0, arena});
  demo.input.program = std::move(program).Build();
  return demo;
}

// Reads back a few ranges of a few tensors from the written file and
// compares them with the generator; also checks that the method's values
// still point at the right constants.
Status SpotCheck(const PteFile& file, const Demo& demo) {
  if (file.constant_buffers().size() != demo.weights.size() + 1) {
    return Corrupt(file.name() + ": " + std::to_string(file.constant_buffers().size()) +
                   " constant buffers, expected " + std::to_string(demo.weights.size() + 1));
  }
  const std::vector<PteTensor> tensors = file.Tensors();
  const size_t n = demo.weights.size();
  const size_t picks[] = {0, 1, 2, n / 2, n - 2, n - 1};
  std::vector<uint8_t> expected, actual;
  for (size_t i : picks) {
    const Weight& w = demo.weights[i];
    const uint64_t vi = demo.first_weight_value + i;
    auto t = std::find_if(tensors.begin(), tensors.end(),
                          [&](const PteTensor& x) { return x.method == 0 && x.value == vi; });
    if (t == tensors.end() || t->data != TensorData::kConstant || t->buffer_index != i + 1) {
      return Corrupt(file.name() + ": values[" + std::to_string(vi) +
                     "] is not the tensor of constant " + std::to_string(i + 1) + " (" + w.name +
                     ")");
    }
    ETPACK_ASSIGN_OR_RETURN(const SourcePtr bytes, file.TensorSource(*t));
    if (bytes->size() != w.bytes) {
      return Corrupt(file.name() + ": " + w.name + " has " + std::to_string(bytes->size()) +
                     " bytes, expected " + std::to_string(w.bytes));
    }
    const uint64_t chunk = std::min<uint64_t>(w.bytes, 4096);
    for (uint64_t off : {uint64_t{0}, (w.bytes - chunk) / 2 / 8 * 8 + 3, w.bytes - chunk}) {
      const uint64_t len = std::min(chunk, w.bytes - off);
      expected.resize(static_cast<size_t>(len));
      Fill(PatternFor(i, w.scalar_type), off, expected.data(), expected.size());
      actual.resize(expected.size());
      ETPACK_RETURN_IF_ERROR(bytes->ReadAt(off, actual.data(), actual.size()));
      if (actual != expected) {
        return Corrupt(file.name() + ": bytes [" + std::to_string(off) + ", +" +
                       std::to_string(len) + ") of " + w.name +
                       " differ from what the generator produced");
      }
    }
  }
  return Status::OK();
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

Status RunDemo(const Config& config, const std::string& dir, const Env& env) {
  using Clock = std::chrono::steady_clock;
  const std::string path = JoinPath(dir, "demo.pte");
  // -o names a folder to write into: make it, as `mkdir -p` would.
  ETPACK_RETURN_IF_ERROR(env.out().MakeFolders(dir));

  const Clock::time_point t0 = Clock::now();
  Demo demo = BuildDemo(config);
  uint64_t weight_bytes = 0;
  for (const Weight& w : demo.weights) weight_bytes += w.bytes;
  std::printf("model:   llama-shaped, %s, dim %" PRId64 ", %s (%" PRId64 " kv), ffn %" PRId64
              ", vocab %" PRId64 "\n",
              Count(config.layers, "layer").c_str(), config.dim,
              Count(config.heads(), "head").c_str(), config.kv_heads(), config.hidden(),
              config.vocab);
  std::printf("weights: %s (BFLOAT16 matrices, FLOAT norms), %s\n",
              Count(demo.weights.size(), "tensor").c_str(), BytesText(weight_bytes).c_str());
  std::fflush(stdout);

  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(demo.input), PteOptions{}));
  const Clock::time_point t1 = Clock::now();
  ETPACK_RETURN_IF_ERROR(WritePlanned(path, plan.artifact, Writing{env}));
  const Clock::time_point t2 = Clock::now();
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PteFile> file, PteFile::Open(path, env));
  ETPACK_RETURN_IF_ERROR(SpotCheck(*file, demo));
  const Clock::time_point t3 = Clock::now();

  const ExtendedHeader& hdr = file->header();
  const uint64_t constants = file->constant_buffers().size() - 1;
  uint64_t constant_bytes = 0;
  for (const PteSegmentMap::Segment& s : file->layout().segments) {
    if (s.role == SegmentRole::kConstants) constant_bytes += s.size;
  }
  const double write_s = Seconds(t2 - t1);
  const double mib_s =
      write_s > 0 ? static_cast<double>(file->size()) / (1024.0 * 1024.0) / write_s : 0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  std::printf("wrote:   %s\n", path.c_str());
  std::printf("  file size:           %s\n", BytesText(file->size()).c_str());
  std::printf("  program_size:        %" PRIu64 "\n", hdr.program_size);
  std::printf("  segment base offset: %" PRIu64 "\n", hdr.segment_base_offset);
  std::printf("  segments:            %zu\n", file->layout().segments.size());
  std::printf("  constants:           %s, %s\n", Count(constants, "tensor").c_str(),
              BytesText(constant_bytes).c_str());
  std::printf("time:    plan %.3f s, write %.3f s (%.0f MiB/s), verify %.3f s, total %.3f s\n",
              Seconds(t1 - t0), write_s, mib_s, Seconds(t3 - t2), Seconds(t3 - t0));
  std::printf("memory:  peak RSS %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("verified: %s opens with full validation; spot-checked tensors match\n",
              path.c_str());
  return Status::OK();
}

}  // namespace

int Demo(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"--size", "-o", "--output"}, {});
  if (!args.ok()) return UsageError("demo", args.status().message());
  if (!args->positional.empty()) {
    return UsageError("demo", "unexpected argument '" + args->positional[0] + "'");
  }
  uint64_t size = kDefaultSize;
  if (const std::string* text = args->Value("--size")) {
    Result<uint64_t> parsed = ParseByteSize(*text, "--size");
    if (!parsed.ok()) return UsageError("demo", parsed.status().message());
    size = *parsed;
  }
  if (size > kMaxSize) {
    return UsageError("demo", "--size " + BytesText(size) + " is above the limit of 1 TiB");
  }
  Result<Config> config = ChooseConfig(size);
  if (!config.ok()) return UsageError("demo", config.status().message());
  const std::string dir = args->Output() ? *args->Output() : ".";

  if (Status s = RunDemo(*config, dir, env); !s.ok()) return Failure(s);
  return kExitOk;
}

}  // namespace etpack::cli
