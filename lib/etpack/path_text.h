// etpack/path_text.h — what a path's text says: its last name, its stem,
// its folder, a name joined to a folder. Text only: nothing here looks at
// a disk, so these may run on paths an Env (etpack/env.h) resolves
// anywhere, and the layers above io need no <filesystem> of their own. The
// rules are std::filesystem::path's (POSIX separators).

#ifndef ETPACK_PATH_TEXT_H_
#define ETPACK_PATH_TEXT_H_

#include <string>

namespace etpack {

// The last name: "b.pte" for "a/b.pte"; "" for a path ending in '/'.
std::string PathFileName(const std::string& path);

// The last name without its last suffix: "b" for "a/b.pte".
std::string PathStem(const std::string& path);

// Everything before the last name: "a" for "a/b.pte", "" for "b.pte".
std::string PathFolder(const std::string& path);

// `name` inside the folder `dir`: "a/b.pte" for ("a", "b.pte"); `name`
// alone for an empty `dir`; `name` itself when it is absolute.
std::string JoinPath(const std::string& dir, const std::string& name);

// Whether `a` and `b` name one path once "." and ".." steps and repeated
// separators are taken out (lexically: no link followed, nothing asked of
// the disk). Two texts that differ may still lead to one file.
bool SamePathText(const std::string& a, const std::string& b);

}  // namespace etpack

#endif  // ETPACK_PATH_TEXT_H_
