// etpack/env.h — the file systems the library touches: one pair handed to
// every entry point that opens a path, so a caller (a test, an embedder
// with its own storage) decides once where bytes come from and go to.
//
// Every entry point that takes a path reads it, and everything it names
// (a manifest's file references, an index's shards, a case file's .npy
// files, a program's data files), through `Env::input`, and makes the
// files it writes through `Env::output`. An entry point that takes
// options finds its Env in them (VerifyOptions::env, ShareOptions::env,
// ArchiveOptions::env); one without options takes `const Env& env` last
// (Archive::Open keeps it for the files it extracts). A default Env is the
// POSIX file system both ways; WriteArtifactFiles(env, ...) writes through
// it.
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
