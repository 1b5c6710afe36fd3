// same_file.h (internal to core and the layers above) — the one test of
// file identity: whether two open descriptors are one file (the same device
// and inode, whatever names, links or descriptors lead to it). Every
// "is this the same file" question (an input that is also the output, an
// update's lock, a checkpoint given twice) ends here, through
// InputFile::SameFileAs or the outputs' Replaces().

#ifndef ETPACK_CORE_SAME_FILE_H_
#define ETPACK_CORE_SAME_FILE_H_

namespace etpack {

// False when either descriptor cannot be asked (closed, -1).
bool SameFile(int a, int b);

}  // namespace etpack

#endif  // ETPACK_CORE_SAME_FILE_H_
