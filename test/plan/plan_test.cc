// The planner's arithmetic and the assembler, checked exhaustively over
// small cases and by invariants over random ones. No files involved.
#include "plan/segments.h"

#include <cstring>
#include <random>
#include <utility>
#include "catch.h"

#include "bpte/bpte_header.h"
#include "etpack/pte_file.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"
#include "ptd/ptd_header.h"
#include "pte/pte_header.h"

using namespace etpack;

TEST_CASE("AlignUp rounds up to any positive alignment and refuses to wrap") {
  for (uint64_t a = 1; a <= 4100; a += (a < 40 ? 1 : 97)) {
    for (uint64_t off = 0; off < 3 * a; off += (a < 40 ? 1 : 13)) {
      auto r = AlignUp(off, a);
      REQUIRE(r.ok());
      CHECK(*r % a == 0);
      CHECK(*r >= off);
      CHECK(*r - off < a);
    }
  }
  CHECK(*AlignUp(UINT64_MAX, 1) == UINT64_MAX);
  CHECK(*AlignUp(UINT64_MAX - UINT64_MAX % 12, 12) == UINT64_MAX - UINT64_MAX % 12);
  for (uint64_t a : {uint64_t{16}, uint64_t{12}}) {
    auto r = AlignUp(UINT64_MAX - 1, a);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kOutOfRange);
  }
}

TEST_CASE("CheckAlignment accepts any positive alignment up to kMaxAlignment") {
  for (uint64_t good : {uint64_t{1}, uint64_t{3}, uint64_t{12}, uint64_t{48}, uint64_t{100},
                        kMaxAlignment - 1, kMaxAlignment}) {
    CHECK(CheckAlignment(good, "a").ok());
  }
  for (uint64_t big : {kMaxAlignment + 1, kMaxAlignment * 2, uint64_t{1} << 33, UINT64_MAX}) {
    Status s = CheckAlignment(big, "segment_alignment");
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(s.message() == "segment_alignment = " + std::to_string(big) +
                             " exceeds the maximum of 1073741824 (1 GiB)");
  }
  Status zero = CheckAlignment(0, "segment_alignment");
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.message() == "segment_alignment = 0 is not a positive alignment");
}

TEST_CASE("CheckPowerOfTwo accepts only powers of two up to its maximum") {
  CHECK(CheckPowerOfTwo(1, "a").ok());
  CHECK(CheckPowerOfTwo(kMaxAlignment, "a").ok());
  CHECK(CheckPowerOfTwo(65536, "a", 65536).ok());
  CHECK(CheckPowerOfTwo(131072, "a", 65536).message() ==
        "a = 131072 exceeds the maximum of 65536 (64 KiB)");
  for (uint64_t bad : {uint64_t{0}, uint64_t{3}, uint64_t{48}, uint64_t{100}, UINT64_MAX}) {
    Status s = CheckPowerOfTwo(bad, "constant_tensor_alignment");
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(s.message() ==
          "constant_tensor_alignment = " + std::to_string(bad) + " is not a power of two");
  }
}

TEST_CASE("Lcm of requested alignments, checked against 2^64") {
  CHECK(*Lcm(12, 8, "x") == 24);
  CHECK(*Lcm(3, 128, "x") == 384);
  CHECK(*Lcm(256, 128, "x") == 256);
  CHECK(*Lcm(1, 1, "x") == 1);
  CHECK(*Lcm(kMaxAlignment - 1, kMaxAlignment, "x") == (kMaxAlignment - 1) * kMaxAlignment);
  auto r = Lcm(UINT64_MAX, UINT64_MAX - 1, "segment 2");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  CHECK(r.status().message() ==
        "segment 2: lcm(18446744073709551615, 18446744073709551614) "
        "exceeds 2^64");
}

namespace {

std::vector<SourcePtr> Sized(const std::vector<uint64_t>& sizes) {
  std::vector<SourcePtr> out;
  for (uint64_t n : sizes)
    out.push_back(GeneratorSource("s", n, [](uint64_t, uint8_t*, size_t) { return Status::OK(); }));
  return out;
}

// Segments by (size, alignment) alone, for the arithmetic.
std::vector<Segment> Specs(std::initializer_list<std::pair<uint64_t, uint64_t>> specs) {
  std::vector<Segment> out;
  for (auto [size, alignment] : specs) out.push_back(Segment{size, alignment, {}});
  return out;
}

std::vector<uint64_t> Offsets(const Segment& s) {
  std::vector<uint64_t> out;
  for (const Piece& p : s.pieces) out.push_back(p.offset);
  return out;
}

}  // namespace

TEST_CASE("PackSegment pads between sources, never after the last") {
  // The reference constants of golden case pte_constants.
  auto p = PackSegment(Sized({0, 24, 1, 3, 10, 16, 8}), 16);
  REQUIRE(p.ok());
  CHECK(Offsets(*p) == std::vector<uint64_t>{0, 0, 32, 48, 64, 80, 96});
  CHECK(p->size == 104);
  // Mutable values are packed: alignment 1.
  auto m = PackSegment(Sized({0, 12, 8, 5}), 1);
  REQUIRE(m.ok());
  CHECK(Offsets(*m) == std::vector<uint64_t>{0, 0, 12, 20});
  CHECK(m->size == 25);
  auto e = PackSegment({}, 16);
  REQUIRE(e.ok());
  CHECK(e->pieces.empty());
  CHECK(e->size == 0);
  CHECK_FALSE(PackSegment(Sized({1, 2}), 0).ok());
  auto twelve = PackSegment(Sized({1, 2, 3}), 12);  // any positive alignment
  REQUIRE(twelve.ok());
  CHECK(Offsets(*twelve) == std::vector<uint64_t>{0, 12, 24});
  CHECK(twelve->pieces[1].alignment == 4);  // achieved: a power of two
}

TEST_CASE("PackSegment overflow is an error near 2^64") {
  auto r = PackSegment(Sized({UINT64_MAX - 100, 1, 1}), 128);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  auto r2 = PackSegment(Sized({UINT64_MAX, 1}), 1);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.status().code() == Code::kOutOfRange);
  CHECK(r2.status().message().find("buffer 1 end") != std::string::npos);
  auto ok = PackSegment(Sized({UINT64_MAX}), 1);
  REQUIRE(ok.ok());
  CHECK(ok->size == UINT64_MAX);
}

TEST_CASE("LayoutSegments follows the reference cases") {
  // pte_named_data: constants 24 B, then 10 B (align 1), 200 B (64), 5 B (512).
  auto l = LayoutSegments(Specs({{24, 1}, {10, 1}, {200, 64}, {5, 512}}), 128);
  REQUIRE(l.ok());
  CHECK(l->offsets == std::vector<uint64_t>{0, 128, 256, 512});
  CHECK(l->data_size == 517);
  // pte_delegates: empty constant segment, then 300 and 1000 bytes.
  auto d = LayoutSegments(Specs({{0, 1}, {300, 1}, {1000, 1}}), 128);
  REQUIRE(d.ok());
  CHECK(d->offsets == std::vector<uint64_t>{0, 0, 384});
  CHECK(d->data_size == 1384);
  auto none = LayoutSegments({}, 128);
  REQUIRE(none.ok());
  CHECK(none->data_size == 0);
}

TEST_CASE("LayoutSegments rejects bad alignments, naming them") {
  auto r = LayoutSegments(Specs({{1, 1}}), 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("segment_alignment = 0 is not a positive") != std::string::npos);
  auto r2 = LayoutSegments(Specs({{1, 1}, {1, 0}}), 128);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.status().message().find("segment 1 alignment = 0") != std::string::npos);
}

TEST_CASE("LayoutSegments: alignments that are not powers of two combine by lcm") {
  // Upstream's test_named_data_segments: segment_alignment 12, buffers of 8,
  // 16, 24 bytes asking 8, 16, 24: starts at multiples of 24, 48, 24.
  auto l = LayoutSegments(Specs({{8, 8}, {16, 16}, {24, 24}}), 12);
  REQUIRE(l.ok());
  CHECK(l->offsets == std::vector<uint64_t>{0, 48, 72});
  CHECK(l->data_size == 96);
  // What each start achieves is a power of two, never the request itself.
  CHECK(l->alignments == std::vector<uint64_t>{8, 16, 8});
  // Named data asking 3 after a 24-byte constant segment, segment alignment
  // 128: lcm 384.
  auto n = LayoutSegments(Specs({{24, 1}, {8, 3}, {16, 256}}), 128);
  REQUIRE(n.ok());
  CHECK(n->offsets == std::vector<uint64_t>{0, 384, 512});
  CHECK(n->alignments == std::vector<uint64_t>{128, 128, 256});
  // Rounding up to an lcm near 2^64 is an error, never a wrap.
  auto big = LayoutSegments(Specs({{UINT64_MAX - 10, 1}, {1, 3}}), 128);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == Code::kOutOfRange);
}

TEST_CASE("LayoutSegments beyond 4 GiB and near 2^64") {
  const uint64_t six_gib = uint64_t{6} << 30;
  auto l = LayoutSegments(Specs({{six_gib + 3, 1}, {7, 4096}}), 128);
  REQUIRE(l.ok());
  CHECK(l->offsets[1] == ((six_gib + 3 + 4095) & ~uint64_t{4095}));
  CHECK(l->data_size == l->offsets[1] + 7);
  auto bad = LayoutSegments(Specs({{UINT64_MAX - 100, 1}, {1, 1}}), 128);  // rounds past 2^64
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kOutOfRange);
}

TEST_CASE("LayoutSegments invariants over random inputs") {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    const uint64_t seg_align = uint64_t{1} << (rng() % 13);
    std::vector<Segment> specs(rng() % 12);
    for (auto& s : specs) {
      s.size = rng() % 3 == 0 ? 0 : rng() % 5000;
      s.alignment = uint64_t{1} << (rng() % 14);
    }
    auto l = LayoutSegments(specs, seg_align);
    REQUIRE(l.ok());
    uint64_t end = 0;
    for (size_t j = 0; j < specs.size(); ++j) {
      const uint64_t a = std::max(seg_align, specs[j].alignment);
      CHECK(l->offsets[j] % a == 0);
      CHECK(l->offsets[j] >= end);
      CHECK(l->offsets[j] - end < a);  // no wasted space beyond the padding
      end = l->offsets[j] + specs[j].size;
    }
    CHECK(l->data_size == end);
  }
}

// ---- the assembler -----------------------------------------------------------

namespace {

// A finished flatbuffer stand-in: root offset 8, identifier, some payload.
std::vector<uint8_t> FakeFlatbuffer(size_t size) {
  std::vector<uint8_t> fb(size, 0xab);
  StoreLE32(fb.data(), 8);
  std::memcpy(fb.data() + 4, "TEST", 4);
  return fb;
}

void EncodeTestHeader(const HeadPlacement& l, uint8_t* header) {
  EncodeHeader(header, {'t', 'h', '0', '0'}, 32,
               {l.head_size, l.segment_base_offset, l.segment_data_size});
}

const HeaderCodec kTestCodec{48, &EncodeTestHeader};

}  // namespace

TEST_CASE("Assemble inserts the header, places the base and every piece") {
  const std::vector<SourcePtr> s = Sized({24, 10, 200});
  auto packed = PackSegment({s[0], s[1]}, 16);
  REQUIRE(packed.ok());
  std::vector<Segment> segments = {*packed, SourceSegment(s[2], 256)};
  auto layout = LayoutSegments(segments, 128);
  REQUIRE(layout.ok());
  CHECK(layout->offsets == std::vector<uint64_t>{0, 256});
  CHECK(layout->alignments == std::vector<uint64_t>{128, 256});

  auto a = Assemble(FakeFlatbuffer(100), &kTestCodec, 128, segments, *layout);
  REQUIRE(a.ok());
  CHECK(a->head.flatbuffer_size == 100);
  CHECK(a->head.header_size == 48);
  CHECK(a->head.head_size == 148);
  CHECK(a->head.segment_base_offset == 256);
  CHECK(a->head.segment_data_size == 456);
  const ArtifactPlan& plan = a->artifact;
  CHECK(plan.head.size() == 148);
  CHECK(plan.file_size == 256 + 456);
  CHECK(LoadLE32(plan.head.data()) == 8 + 48);  // root moved past the header
  CHECK(std::memcmp(plan.head.data() + 8, "th00", 4) == 0);
  CHECK(LoadLE32(plan.head.data() + 12) == 32);
  CHECK(HeaderField(plan.head.data() + 8, 0) == 148);
  CHECK(HeaderField(plan.head.data() + 8, 1) == 256);
  CHECK(HeaderField(plan.head.data() + 8, 2) == 456);
  CHECK(plan.head[8 + 32] == 0);  // padding stays zero

  REQUIRE(plan.placements.size() == 3);
  CHECK(plan.placements[0].offset == 256);
  CHECK(plan.placements[0].alignment == 128);
  CHECK(plan.placements[1].offset == 256 + 32);
  CHECK(plan.placements[1].alignment == 16);
  // The segment asked for 256, but the base is only 128-aligned.
  CHECK(plan.placements[2].offset == 512);
  CHECK(plan.placements[2].alignment == 128);
  CHECK(ValidateArtifactPlan(plan).ok());
}

TEST_CASE("Assemble without a header: bare flatbuffer, or segments after it") {
  std::vector<Segment> empty = {SourceSegment(Sized({0})[0])};
  auto layout = LayoutSegments(empty, 128);
  REQUIRE(layout.ok());
  auto bare = Assemble(FakeFlatbuffer(100), nullptr, 128, empty, *layout);
  REQUIRE(bare.ok());
  CHECK(bare->artifact.file_size == 100);
  CHECK(bare->artifact.placements.empty());
  CHECK(bare->head.segment_base_offset == 0);
  CHECK(bare->head.header_size == 0);

  // A header but no segment data still places (and pads to) the base.
  auto headed = Assemble(FakeFlatbuffer(100), &kTestCodec, 128, empty, *layout);
  REQUIRE(headed.ok());
  CHECK(headed->head.segment_base_offset == 256);
  CHECK(headed->artifact.file_size == 256);

  std::vector<Segment> one = {SourceSegment(Sized({7})[0], 32)};
  auto l1 = LayoutSegments(one, 32);
  REQUIRE(l1.ok());
  auto after = Assemble(FakeFlatbuffer(96), nullptr, 32, one, *l1);
  REQUIRE(after.ok());
  CHECK(after->head.segment_base_offset == 96);
  CHECK(after->artifact.file_size == 103);
  CHECK(after->artifact.head.size() == 96);
}

TEST_CASE("Assemble refuses pieces outside their segment or off their alignment") {
  const std::vector<SourcePtr> s = Sized({10, 10});
  auto check = [&](Segment seg, const std::string& needle) {
    std::vector<Segment> segments = {seg};
    auto layout = LayoutSegments(segments, 16);
    REQUIRE(layout.ok());
    auto a = Assemble(FakeFlatbuffer(64), &kTestCodec, 16, segments, *layout);
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().message().find(needle) != std::string::npos);
  };
  check(Segment{15, 1, {{0, 1, s[0]}, {8, 1, s[1]}}}, "segment 0 piece 1 [8, +10)");
  check(Segment{15, 1, {{6, 1, s[0]}}}, "segment 0 piece 0 [6, +10)");
  check(Segment{32, 1, {{4, 8, s[0]}}}, "piece 0 offset 4 is not a multiple of its alignment 8");
  check(Segment{32, 1, {{0, 3, s[0]}}}, "piece 0 alignment = 3");
  check(Segment{32, 1, {{0, 1, nullptr}}}, "piece 0: source is null");

  std::vector<Segment> one = {SourceSegment(s[0])};
  SegmentOffsets wrong;
  CHECK_FALSE(Assemble(FakeFlatbuffer(64), nullptr, 16, one, wrong).ok());
}

TEST_CASE("Assemble overflow is an error, never a wrap") {
  std::vector<Segment> huge = {Segment{UINT64_MAX - 64, 1, {}}};
  auto layout = LayoutSegments(huge, 1);
  REQUIRE(layout.ok());
  auto a = Assemble(FakeFlatbuffer(100), &kTestCodec, 128, huge, *layout);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == Code::kOutOfRange);
}

TEST_CASE("Assemble beyond 4 GiB keeps 64-bit offsets") {
  const uint64_t six_gib = uint64_t{6} << 30;
  std::vector<Segment> segments = {SourceSegment(Sized({six_gib + 3})[0]),
                                   SourceSegment(Sized({7})[0], 4096)};
  auto layout = LayoutSegments(segments, 128);
  REQUIRE(layout.ok());
  auto a = Assemble(FakeFlatbuffer(100), &kTestCodec, 4096, segments, *layout);
  REQUIRE(a.ok());
  CHECK(a->head.segment_base_offset == 4096);
  CHECK(a->artifact.placements[1].offset == 4096 + layout->offsets[1]);
  CHECK(a->artifact.placements[1].offset > (uint64_t{1} << 32));
  CHECK(a->artifact.placements[1].alignment == 4096);
  CHECK(HeaderField(a->artifact.head.data() + 8, 2) == layout->data_size);
  CHECK(ValidateArtifactPlan(a->artifact).ok());
}

TEST_CASE("NestedSegment keeps a plan's placements and refuses a malformed one") {
  ArtifactPlan inner;
  inner.head = FakeFlatbuffer(40);
  inner.file_size = 200;
  inner.placements.push_back({128, 128, Sized({72})[0]});
  auto seg = NestedSegment(inner, 4096);
  REQUIRE(seg.ok());
  CHECK(seg->size == 200);
  CHECK(seg->alignment == 4096);
  REQUIRE(seg->pieces.size() == 2);
  CHECK(seg->pieces[0].source->size() == 40);
  CHECK(seg->pieces[1].offset == 128);
  CHECK(seg->pieces[1].alignment == 128);

  // Inside a 64-aligned base the inner 128 holds only up to 64.
  std::vector<Segment> segments = {*seg};
  auto layout = LayoutSegments(segments, 16);
  REQUIRE(layout.ok());
  auto a = Assemble(FakeFlatbuffer(64), &kTestCodec, 64, segments, *layout);
  REQUIRE(a.ok());
  CHECK(a->artifact.placements[1].offset == 128 + 128);
  CHECK(a->artifact.placements[1].alignment == 64);

  inner.placements[0].offset = 150;  // runs past file_size, and off its alignment
  auto bad = NestedSegment(inner, 128);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("artifact plan: placements[0]") != std::string::npos);
}

// ---- the three header codecs, each against its own parser ------------------------

namespace {

// One 10-byte segment after a 200-byte flatbuffer, with `codec`'s header.
Assembly AssembleWith(const HeaderCodec& codec, uint64_t base_alignment) {
  std::vector<Segment> segments = {SourceSegment(Sized({10})[0])};
  auto layout = LayoutSegments(segments, base_alignment);
  REQUIRE(layout.ok());
  auto a = Assemble(FakeFlatbuffer(200), &codec, base_alignment, segments, *layout);
  REQUIRE(a.ok());
  return *a;
}

}  // namespace

TEST_CASE("eh00: the codec's header parses back, padded to the largest force_align") {
  auto codec = pte::ExtendedHeaderCodec(64);
  REQUIRE(codec.ok());
  CHECK(codec->header_size == 64);
  CHECK(pte::ExtendedHeaderCodec(8)->header_size == 32);
  CHECK_FALSE(pte::ExtendedHeaderCodec(48).ok());
  const Assembly a = AssembleWith(*codec, 128);
  auto h = ParseExtendedHeader(a.artifact.head.data(), a.artifact.head.size());
  REQUIRE(h.ok());
  CHECK(h->present);
  CHECK(h->length == 32);
  CHECK(h->program_size == 264);
  CHECK(h->segment_base_offset == 384);
  CHECK(h->segment_data_size == 10);
}

TEST_CASE("FH01: the codec's header parses back") {
  const Assembly a = AssembleWith(ptd::kHeaderCodec, 128);
  auto h = ptd::ParseHeader(a.artifact.head.data(), a.artifact.head.size());
  REQUIRE(h.ok());
  CHECK(h->length == 40);
  CHECK(h->flatbuffer_offset == 48);
  CHECK(h->flatbuffer_size == 200);
  CHECK(h->segment_base_offset == 256);
  CHECK(h->segment_data_size == 10);
  CHECK(a.artifact.head[8 + 40] == 0);  // the padding to 48
}

TEST_CASE("bh00: the codec's header parses back; absent or short is told apart") {
  const Assembly a = AssembleWith(bpte::kHeaderCodec, 4096);
  auto h = bpte::ParseHeader(a.artifact.head.data(), a.artifact.head.size());
  REQUIRE(h.ok());
  CHECK(h->present);
  CHECK(h->length == 32);
  CHECK(h->flatbuffer_size == 232);
  CHECK(h->segment_base_offset == 4096);
  CHECK(h->segment_data_size == 10);

  const std::vector<uint8_t> plain = FakeFlatbuffer(200);
  auto none = bpte::ParseHeader(plain.data(), plain.size());
  REQUIRE(none.ok());
  CHECK_FALSE(none->present);
  std::vector<uint8_t> bad = a.artifact.head;
  StoreLE32(bad.data() + 12, 16);
  CHECK(bpte::ParseHeader(bad.data(), bad.size()).status().message() ==
        "bh00 header length = 16 is below 32");
}
