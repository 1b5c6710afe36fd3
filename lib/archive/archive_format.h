// archive_format.h (internal) — the bytes of a seekable zstd archive that
// are not zstd frames: the seek table at the end (zstd's seekable format)
// and etpack's region index in the last frame. Encoders and decoders side by side
// in archive_format.cc; docs/archive.md describes both.

#ifndef ETPACK_ARCHIVE_ARCHIVE_FORMAT_H_
#define ETPACK_ARCHIVE_ARCHIVE_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/archive.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Skippable frames: a magic number 0x184D2A50..5F, a 4-byte content size.
inline constexpr uint32_t kSeekTableMagic = 0x184D2A5E;
inline constexpr uint32_t kIndexMagic = 0x184D2A5A;
inline constexpr uint64_t kSkippableHeaderSize = 8;
// Number_Of_Frames (4), Seek_Table_Descriptor (1), Seekable_Magic_Number (4).
inline constexpr uint64_t kSeekFooterSize = 9;
inline constexpr uint32_t kSeekableMagic = 0x8F92EAB1;
// The seekable format's cap on one frame's decompressed size.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

struct SeekEntry {
  uint32_t compressed = 0;
  uint32_t decompressed = 0;
};

// The whole seek-table frame (header included) for `entries`, without
// per-frame checksums (zstd frames carry their own).
std::vector<uint8_t> EncodeSeekTable(const std::vector<SeekEntry>& entries);

// Reads the seek table at the end of `file` (named `name` in errors) and
// returns the frames with their offsets, checking that the compressed sizes
// add up exactly to the bytes before the table.
Result<std::vector<ArchiveFrame>> DecodeSeekTable(const std::string& name, const Source& file);

// The whole index frame (header included) for a file of `size` bytes.
std::vector<uint8_t> EncodeIndex(uint64_t size, const std::vector<ArchiveRegion>& regions);

// True when `frame` (at least its 8 header bytes) starts an index frame.
bool IsIndexFrame(const uint8_t* frame, uint64_t n);

// Parses an index frame of n bytes (header included) of an archive whose
// original file has `size` bytes; every region must lie inside it.
Result<std::vector<ArchiveRegion>> DecodeIndex(const uint8_t* frame, uint64_t n, uint64_t size);

}  // namespace etpack

#endif  // ETPACK_ARCHIVE_ARCHIVE_FORMAT_H_
