// etpack/etpack.h — the etpack library in one include, and its manual.
//
// etpack writes ExecuTorch artifacts — programs (.pte), external data
// (.ptd) and bundled programs (.bpte) — byte-compatible with the reference
// serializer, for models far larger than memory, and reads them back with
// full validation.
//
// INSIDE: LAYERS THAT ONLY LOOK DOWN
//
//   The library's folders (lib/) are layers; each includes only headers of
//   its own folder and of folders below it, and a public header here
//   belongs to the folder that implements it (lib/layers.txt, the one place
//   the order is written; test/include_layers.py checks every include):
//
//     core -> io -> flatbuffer -> integrity -> plan -> writer -> ptd -> pte
//       -> bpte -> nfat -> import -> archive -> reports -> share -> update
//       -> capi
//
//   The command-line tool (apps/) sits on top and, like any user of the
//   installed library, sees only these headers.
//
// WRITING: PLAN, THEN STREAM
//
//   1. Describe the bytes. Every weight, payload or test tensor is a Source
//      (source.h) that knows its size and can copy any range of itself:
//        FileSource(path, offset, length)   bytes already in a file
//        MemorySource(data, size)           bytes you hold (borrowed)
//        GeneratorSource(name, size, fill)  bytes produced on demand
//      A program's structure carries no data: build it with ProgramBuilder
//      (program_builder.h), give it as a json::Value in flatc form
//      (json.h) or as Program flatbuffer bytes. Its data travels beside it
//      in PteInput's lists (pte.h), referred to by index as the format
//      does: constants[i] for data_buffer_idx = i, mutable_data[i],
//      delegates[i] for a delegate {INLINE, i}, named data by key.
//
//   2. Plan (pass one). PlanPte (pte.h), PlanPtd (ptd.h) or PlanBpte
//      (bpte.h) computes where every byte goes and returns an ArtifactPlan
//      (writer.h): the small head (headers + flatbuffer) and a list of
//      placements, each a source at a fixed offset. Planning reads no bulk
//      data (only delegate payloads of equal size are compared to share
//      them). A plan can be nested: PlanBpte embeds a PtePlan's artifact
//      without materializing it; PlanNfat (nfat.h) packs several lowered
//      programs into one fat delegate payload, which ArtifactSource
//      (artifact_source.h) turns into a Source for PteInput::delegates (PlanPte
//      nests it, streaming its parts). PlanFatDelegate (fat_delegate.h)
//      does both and merges the lowerings' named data, every weight once.
//
//   3. Write (pass two). WriteArtifactFile(path, plan) (writer.h) reserves
//      the file, streams each source into place through bounded windows and
//      puts the finished file in place under `path`. On failure `path` is
//      untouched and nothing is left behind. WriteArtifactFiles publishes
//      several files as one unit (a .ptd before the .pte that needs it).
//      WritePte / WritePtd do steps 2 and 3 in one call. All output goes
//      through one seam (output.h), with POSIX and in-memory file systems.
//      Every entry point that opens a path, to read or to write, takes the
//      pair of file systems as one Env, its last parameter (env.h; default:
//      POSIX both ways).
//
//     etpack::PteInput input;
//     input.program = std::move(builder).Build();
//     input.constants = {etpack::OwnedSource({}), weights};  // 0: the placeholder
//     ETPACK_ASSIGN_OR_RETURN(etpack::PtePlan plan, etpack::PlanPte(std::move(input)));
//     ETPACK_RETURN_IF_ERROR(etpack::WriteArtifactFile("model.pte", plan.artifact));
//
// READING
//
//   PteFile, PtdFile and BpteFile (pte_file.h, ptd_file.h, bpte_file.h) are
//   ArtifactFiles (artifact_file.h): Open(path) reads only the head and
//   validates the whole artifact before returning, so every accessor of a
//   returned reader is safe. A PteFile describes its program with plain
//   values (methods(), Tensors(), layout(), named_data()) and hands out
//   the bytes as sources (TensorSource, SegmentSource, RangeSource), which
//   can feed a new plan directly: PteFile::ToInput() is a repack's input.
//   OpenArtifact(path) (artifact_kind.h) opens any of the three as the
//   reader of its kind. Inspect(path, sink) (inspect.h) reports any of
//   them as typed structs (InspectSink), which ReportJson prints as the document
//   `etpack inspect --json` prints (InspectJson(path): as one tree); Verify(paths)
//   (verify.h) gives the verdict `etpack verify` prints, on a file, a
//   program with its .ptd files or a set of .ptd files. SizesOf(path)
//   (sizes.h) accounts for every byte of an artifact, each in one row of
//   what holds it (`etpack inspect --sizes`), and SizesOfFiles for several
//   files, with the bytes they hold alike.
//
// IMPORTING
//
//   From files other tools write, to the inputs above, without reading
//   bulk data: ReadCheckpoint / PtdInputFromCheckpoint (safetensors.h),
//   ReadNpy (npy.h), LoadManifest (manifest.h: the `etpack pack` document),
//   LoadBundleCases (bundle_cases.h: test cases for a .bpte);
//   CheckExternalReferences / ExternalizeConstants / InternalizeData
//   (external_data.h) relate a program to its .ptd files.
//
// TRANSPORT
//
//   CompressFile / Archive (archive.h, in the separate etpack_archive
//   library, the one user of libzstd) turn any artifact into a seekable
//   zstd archive that stock `zstd -d` restores, and restore it, or one
//   named tensor of it, with bounded memory (docs/archive.md).
//
// SHARING
//
//   share.h is `etpack share` (docs/share.md): a family of programs
//   written thin, each under its own name, beside one .ptd holding every
//   item two or more of them hold alike; the folder is published as one
//   unit, all old or all new.
//
// WHO OWNS WHAT
//
//   - Sources are shared (SourcePtr). Memory behind MemorySource(data,
//     size) is borrowed: it must stay valid and unchanged until the last
//     write using it has returned. The keep_alive overload, OwnedSource and
//     every source a reader hands out own what they need.
//   - A plan holds sources, not bytes; it may be written more than once.
//   - Readers own their head in memory; the sources they hand out outlive them.
//   - FromMemory readers borrow their bytes the same way; the keep_alive
//     they are given owns them.
//   - No function throws. Distinct objects may be used from distinct
//     threads; a reader, a plan and a source may be shared read-only.
//
// ERRORS
//
//   Every fallible call returns Status or Result<T> (status.h) whose
//   message names the file, the field and the value. Codes:
//     kInvalidArgument  the request is wrong: bad options, a malformed
//                       program tree, manifest or CASES.json (documents a
//                       caller writes), plan inputs that do not fit
//                       together, a precondition the library can check;
//     kNotFound         a named file, key or method does not exist;
//     kCorrupt          an artifact or data file a program wrote (.pte,
//                       .ptd, .bpte, safetensors, .npy) is malformed;
//     kOutOfRange       a size, offset or count does not fit (64 bits,
//                       FlatBuffers' 2 GiB, a read past a source's end);
//     kIoError          the operating system refused (errno text included);
//     kUnimplemented    a valid request this version does not support.
//
// FROM C
//
//   etpack_c.h is this API in plain C99 for C and FFIs (docs/c-api.md); it
//   is not included here.
//
// UNITS AND LIMITS
//
//   Every size and offset is a uint64_t count of bytes, and every addition
//   that could overflow is checked. Segment and named-data alignments are
//   any positive value up to kMaxAlignment (1 GiB, plan.h), combined by
//   least common multiple as the reference serializer does; constant and
//   delegate alignments, which also pad inside the flatbuffer (a
//   force_align), are powers of two of at most kMaxInlineAlignment
//   (64 KiB, pte.h).

#ifndef ETPACK_ETPACK_H_
#define ETPACK_ETPACK_H_

#include "etpack/artifact_file.h"
#include "etpack/artifact_kind.h"
#include "etpack/artifact_source.h"
#include "etpack/bpte.h"
#include "etpack/bpte_file.h"
#include "etpack/bundle_cases.h"
#include "etpack/env.h"
#include "etpack/error_path.h"
#include "etpack/external_data.h"
#include "etpack/fat_delegate.h"
#include "etpack/inspect.h"
#include "etpack/integrity.h"
#include "etpack/json.h"
#include "etpack/list_text.h"
#include "etpack/manifest.h"
#include "etpack/nfat.h"
#include "etpack/npy.h"
#include "etpack/output.h"
#include "etpack/path_text.h"
#include "etpack/plan.h"
#include "etpack/program_builder.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/safetensors.h"
#include "etpack/share.h"
#include "etpack/sizes.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"
#include "etpack/update.h"
#include "etpack/verify.h"
#include "etpack/writer.h"

#endif  // ETPACK_ETPACK_H_
