// The planner's arithmetic, checked exhaustively over small cases and by
// invariants over random ones. No files involved.
#include "etpack/layout.h"

#include <catch2/catch.hpp>
#include <random>

using namespace etpack;

TEST_CASE("AlignUp rounds up to powers of two and refuses to wrap") {
  for (uint64_t a = 1; a <= 4096; a <<= 1) {
    for (uint64_t off = 0; off < 3 * a; ++off) {
      auto r = AlignUp(off, a);
      REQUIRE(r.ok());
      CHECK(*r % a == 0);
      CHECK(*r >= off);
      CHECK(*r - off < a);
    }
  }
  CHECK(*AlignUp(UINT64_MAX, 1) == UINT64_MAX);
  auto r = AlignUp(UINT64_MAX - 5, 16);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
}

TEST_CASE("CheckAlignment accepts only powers of two") {
  CHECK(CheckAlignment(1, "a").ok());
  CHECK(CheckAlignment(uint64_t{1} << 63, "a").ok());
  for (uint64_t bad : {uint64_t{0}, uint64_t{3}, uint64_t{48}, uint64_t{100}, UINT64_MAX}) {
    Status s = CheckAlignment(bad, "segment_alignment");
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(s.message() == "segment_alignment = " + std::to_string(bad) + " is not a power of two");
  }
}

TEST_CASE("PackBuffers pads between buffers, never after the last") {
  // The reference constants of golden case pte_constants.
  auto p = PackBuffers({0, 24, 1, 3, 10, 16, 8}, 16);
  REQUIRE(p.ok());
  CHECK(p->offsets == std::vector<uint64_t>{0, 0, 32, 48, 64, 80, 96});
  CHECK(p->size == 104);
  // Mutable values are packed: alignment 1.
  auto m = PackBuffers({0, 12, 8, 5}, 1);
  REQUIRE(m.ok());
  CHECK(m->offsets == std::vector<uint64_t>{0, 0, 12, 20});
  CHECK(m->size == 25);
  auto e = PackBuffers({}, 16);
  REQUIRE(e.ok());
  CHECK(e->offsets.empty());
  CHECK(e->size == 0);
  CHECK_FALSE(PackBuffers({1, 2}, 24).ok());
}

TEST_CASE("PackBuffers overflow is an error near 2^64") {
  auto r = PackBuffers({UINT64_MAX - 100, 1, 1}, 128);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  auto r2 = PackBuffers({UINT64_MAX, 1}, 1);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.status().code() == Code::kOutOfRange);
  auto ok = PackBuffers({UINT64_MAX}, 1);
  REQUIRE(ok.ok());
  CHECK(ok->size == UINT64_MAX);
}

TEST_CASE("LayoutSegments follows the reference cases") {
  // pte_named_data: constants 24 B, then 10 B (align 1), 200 B (64), 5 B (512).
  auto l = LayoutSegments({{24, 1}, {10, 1}, {200, 64}, {5, 512}}, 128);
  REQUIRE(l.ok());
  CHECK(l->offsets == std::vector<uint64_t>{0, 128, 256, 512});
  CHECK(l->data_size == 517);
  // pte_delegates: empty constant segment, then 300 and 1000 bytes.
  auto d = LayoutSegments({{0, 1}, {300, 1}, {1000, 1}}, 128);
  REQUIRE(d.ok());
  CHECK(d->offsets == std::vector<uint64_t>{0, 0, 384});
  CHECK(d->data_size == 1384);
  auto none = LayoutSegments({}, 128);
  REQUIRE(none.ok());
  CHECK(none->data_size == 0);
}

TEST_CASE("LayoutSegments rejects bad alignments, naming them") {
  auto r = LayoutSegments({{1, 1}}, 100);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("segment_alignment = 100") != std::string::npos);
  auto r2 = LayoutSegments({{1, 1}, {1, 3}}, 128);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.status().message().find("segment 1 alignment = 3") != std::string::npos);
}

TEST_CASE("LayoutSegments beyond 4 GiB and near 2^64") {
  const uint64_t six_gib = uint64_t{6} << 30;
  auto l = LayoutSegments({{six_gib + 3, 1}, {7, 4096}}, 128);
  REQUIRE(l.ok());
  CHECK(l->offsets[1] == ((six_gib + 3 + 4095) & ~uint64_t{4095}));
  CHECK(l->data_size == l->offsets[1] + 7);
  auto bad = LayoutSegments({{UINT64_MAX - 100, 1}, {1, 1}}, 128);  // rounds past 2^64
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kOutOfRange);
}

TEST_CASE("LayoutSegments invariants over random inputs") {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    const uint64_t seg_align = uint64_t{1} << (rng() % 13);
    std::vector<SegmentSpec> specs(rng() % 12);
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
