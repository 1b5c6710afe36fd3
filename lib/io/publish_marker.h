// publish_marker.h (internal) — the marker that stands beside each file of
// a unit while Publish() puts the unit in place (etpack/output.h): its name,
// its bytes (encoder and decoder side by side) and the check `verify` makes.
//
// No single system call puts two files in place. A writer killed (SIGKILL,
// the OOM killer, power loss) between the renames of a unit that replaces
// existing files leaves some files new and some old; a program would then
// run its old graph with new weights. So before the first file of such a
// unit gets its name, each destination D gets a marker, its name durable,
// "<D's folder>/.<D's name>.etpack-publishing" listing the unit; the markers
// go once every file is in place and its folder synced. A marker present
// means the files it stands beside may come from two runs.
//
// Bytes: "etpack-publishing 1\n" then each destination of the unit, one a
// line, as the writer was given them.

#ifndef ETPACK_IO_PUBLISH_MARKER_H_
#define ETPACK_IO_PUBLISH_MARKER_H_

#include <string>
#include <string_view>
#include <vector>

#include "etpack/input.h"
#include "etpack/status.h"

namespace etpack {

// ".<name>.etpack-publishing", with as much of `name` as fits NAME_MAX.
std::string PublishMarkerName(const std::string& name);

std::string EncodePublishMarker(const std::vector<std::string>& unit);

// The unit's destinations; kCorrupt for bytes that are not a marker.
Result<std::vector<std::string>> DecodePublishMarker(std::string_view bytes);

// kCorrupt naming `path`, its marker and the unit when a marker stands
// beside `path` (or beside the file a symbolic link at `path` leads to),
// looked up through `in`; OK when there is none.
Status CheckNoPublishMarker(InputFs& in, const std::string& path);

}  // namespace etpack

#endif  // ETPACK_IO_PUBLISH_MARKER_H_
