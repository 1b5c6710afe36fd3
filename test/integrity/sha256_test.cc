// SHA-256 (integrity/sha256.h): FIPS 180-4's examples and long messages
// against digests computed elsewhere, every split of a stream, and the
// accelerated block function this CPU uses against the portable one.

#include "integrity/sha256.h"

#include <random>
#include <string>
#include <vector>
#include "catch.h"

#include "integrity/hash.h"

namespace etpack {
namespace {

std::string Hex(const uint8_t* p, size_t n) { return HexDigest(std::vector<uint8_t>(p, p + n)); }

std::string DigestOf(const std::vector<uint8_t>& m) {
  Sha256 sha;
  sha.Update(m.data(), m.size());
  const auto d = sha.Finish();
  return Hex(d.data(), d.size());
}

std::vector<uint8_t> Text(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST_CASE("SHA-256 of FIPS 180-4's examples and long messages", "[sha256]") {
  CHECK(DigestOf({}) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(DigestOf(Text("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(DigestOf(Text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(DigestOf(std::vector<uint8_t>(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::vector<uint8_t> counting;
  for (int i = 0; i < 256000; ++i) counting.push_back(static_cast<uint8_t>(i));
  CHECK(DigestOf(counting) == "b57b64b198d5d59ce5a22a9b9f25e72a7d081476d432051aa923f3dbebb90934");
}

TEST_CASE("SHA-256 of a stream does not depend on how it is split", "[sha256]") {
  std::mt19937 rng(7);
  std::vector<uint8_t> m(300);
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  // Every length across the padding's two cases (55/56 bytes in the last
  // block), each fed whole and in two pieces cut everywhere.
  for (size_t n = 0; n <= m.size(); ++n) {
    const std::vector<uint8_t> whole(m.begin(), m.begin() + n);
    const std::string expected = DigestOf(whole);
    for (size_t cut = 0; cut <= n; cut += 7) {
      Sha256 sha;
      sha.Update(whole.data(), cut);
      sha.Update(whole.data() + cut, n - cut);
      const auto d = sha.Finish();
      INFO("length " << n << " cut at " << cut);
      CHECK(Hex(d.data(), d.size()) == expected);
    }
  }
}

TEST_CASE("The accelerated SHA-256 blocks equal the portable ones", "[sha256]") {
  const sha256_internal::BlockFunction fast =
      sha256_internal::X86Blocks() ? sha256_internal::X86Blocks() : sha256_internal::ArmBlocks();
  if (fast == nullptr) {
    WARN("this CPU has no SHA-256 instructions; only the portable rounds ran");
    CHECK(std::string(Sha256::Implementation()) == "portable");
    return;
  }
  std::mt19937 rng(11);
  std::vector<uint8_t> data(64 * 40);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t blocks : {size_t{1}, size_t{2}, size_t{40}}) {
    uint32_t a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = b[i] = static_cast<uint32_t>(rng());
    sha256_internal::PortableBlocks(a, data.data(), blocks);
    fast(b, data.data(), blocks);
    INFO(Sha256::Implementation() << ", " << blocks << " blocks");
    CHECK(std::vector<uint32_t>(a, a + 8) == std::vector<uint32_t>(b, b + 8));
  }
}

}  // namespace
}  // namespace etpack
