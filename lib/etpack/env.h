// etpack/env.h — the file systems the library touches: one pair handed to
// every entry point that opens a path, so a caller (a test, an embedder
// with its own storage) decides once where bytes come from and go to.
//
// Every entry point that takes a path reads it, and everything it names
// (a manifest's file references, an index's shards, a case file's .npy
// files, a program's data files), through `Env::input`, and makes the
// files it writes through `Env::output` (the folders it makes and the
// files it locks too: OutputFs::MakeFolders, OutputFs::LockForUpdate).
//
// The convention, the same for every one of them: the Env is the LAST
// parameter, `const Env& env = {}`, after any options struct, and no
// options struct carries one. So a call that has no options needs no
// struct just to carry its Env, a call with options reads the same as one
// without, and a reader looks in one place to see where a call's files
// are. Archive::Open keeps its Env for the files it extracts. A default
// Env is the POSIX file system both ways. Below this header, core's
// FileSource and json::ParseFile take the InputFs itself (first), and
// WriteArtifactFiles(fs, ...) an OutputFs: what an Env's calls hand on.
//
// Bytes may still leave an input file without passing through
// InputFile::Read() (an output's in-kernel copy, etpack/input.h): a test
// input that must see every byte is used with that output option off.

#ifndef ETPACK_ENV_H_
#define ETPACK_ENV_H_

#include "etpack/input.h"
#include "etpack/output.h"

namespace etpack {

// Borrowed pointers: the caller owns both file systems, which must outlive
// every call given this Env and everything those calls return (a source
// keeps the InputFile its file system opened).
struct Env {
  // Where paths are opened for reading. Null: DefaultInputFs().
  InputFs* input = nullptr;
  // Where files are written. Null: the POSIX file system, its outputs made
  // with the call's OutputOptions (defaults where the call has none).
  OutputFs* output = nullptr;

  // `input`, or the default.
  InputFs& in() const { return input != nullptr ? *input : *DefaultInputFs(); }
  // `output`, or the POSIX file system with the default OutputOptions: for
  // what no OutputOptions decide (folders, locks). A write given
  // WriteOptions makes its POSIX outputs with WriteOptions::output instead
  // (WriteArtifactFiles).
  OutputFs& out() const { return output != nullptr ? *output : *DefaultOutputFs(); }
};

}  // namespace etpack

#endif  // ETPACK_ENV_H_
