// ArtifactSource: a plan read as a source equals the plan written out, for any
// range, without writing it.

#include "etpack/artifact_source.h"

#include <cstring>
#include <random>
#include <vector>
#include "catch.h"

#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Materialize;
using testing::PatternBytes;

// Head, a gap, a placement, two adjacent ones, an empty one, a gap to the end.
ArtifactPlan GappyPlan() {
  ArtifactPlan plan;
  plan.head = PatternBytes(13, 1);
  plan.placements.push_back({16, 16, OwnedSource(PatternBytes(20, 2))});
  plan.placements.push_back({40, 8, OwnedSource(PatternBytes(8, 3))});
  plan.placements.push_back({48, 16, OwnedSource(PatternBytes(33, 4))});
  plan.placements.push_back({96, 32, OwnedSource({})});
  plan.placements.push_back({128, 128, OwnedSource(PatternBytes(7, 5))});
  plan.file_size = 150;
  return plan;
}

TEST_CASE("ArtifactSource reads every range as the writer writes it") {
  const ArtifactPlan plan = GappyPlan();
  const std::vector<uint8_t> want = Materialize(plan);
  Result<SourcePtr> src = ArtifactSource(plan, "gappy");
  REQUIRE(src.ok());
  REQUIRE((*src)->size() == want.size());
  for (uint64_t off = 0; off <= want.size(); ++off) {
    for (uint64_t n = 0; off + n <= want.size(); ++n) {
      std::vector<uint8_t> got(n + 1, 0xee);
      REQUIRE((*src)->ReadAt(off, got.data(), n).ok());
      INFO("offset " << off << " n " << n);
      REQUIRE(std::memcmp(got.data(), want.data() + off, n) == 0);
      REQUIRE(got[n] == 0xee);
    }
  }
  Result<std::vector<uint8_t>> all = ReadAll(**src);
  REQUIRE(all.ok());
  CHECK(*all == want);
  CHECK(Contains((*src)->Describe(), "gappy (150 bytes)"));
}

TEST_CASE("ArtifactSource nests: a plan of a planned source") {
  const ArtifactPlan inner = GappyPlan();
  Result<SourcePtr> inner_src = ArtifactSource(inner);
  REQUIRE(inner_src.ok());
  ArtifactPlan outer;
  outer.head = {1, 2, 3};
  outer.placements.push_back({256, 256, *inner_src});
  outer.file_size = 256 + inner.file_size;
  Result<SourcePtr> src = ArtifactSource(outer);
  REQUIRE(src.ok());
  Result<std::vector<uint8_t>> all = ReadAll(**src);
  REQUIRE(all.ok());
  CHECK(*all == Materialize(outer));
}

TEST_CASE("ArtifactSource of a single source is that source") {
  SourcePtr bytes = OwnedSource(PatternBytes(100));
  ArtifactPlan plan;
  plan.file_size = 100;
  plan.placements.push_back({0, 1, bytes});
  Result<SourcePtr> src = ArtifactSource(plan);
  REQUIRE(src.ok());
  CHECK(src->get() == bytes.get());
}

TEST_CASE("ArtifactSource refuses a malformed plan and reads past the end") {
  ArtifactPlan plan = GappyPlan();
  plan.file_size = 100;  // the last placement ends at 135
  Result<SourcePtr> bad = ArtifactSource(plan, "short plan");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(Contains(bad.status().message(), "short plan"));
  CHECK(Contains(bad.status().message(), "placements[4]"));

  Result<SourcePtr> src = ArtifactSource(GappyPlan());
  REQUIRE(src.ok());
  uint8_t buf[8];
  Status s = (*src)->ReadAt(145, buf, 8);
  CHECK(s.code() == Code::kOutOfRange);
}

TEST_CASE("ArtifactSource passes a placement's read failure on, naming both") {
  ArtifactPlan plan;
  plan.head = {9};
  plan.placements.push_back({8, 8, GeneratorSource("weights", 10, [](uint64_t, uint8_t*, size_t) {
                               return IoError("reading weights", 5);
                             })});
  plan.file_size = 18;
  Result<SourcePtr> src = ArtifactSource(plan, "outer");
  REQUIRE(src.ok());
  uint8_t buf[18];
  CHECK((*src)->ReadAt(0, buf, 1).ok());  // the head alone does not touch it
  Status s = (*src)->ReadAt(0, buf, 18);
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "outer"));
  CHECK(Contains(s.message(), "reading weights"));
}

}  // namespace
}  // namespace etpack
