// etpack/program_objects.h — a program read from the exporter's own objects.
//
// ExecuTorch's exporter holds a Program as a tree of objects (its exir
// dataclasses) whose attributes carry the schema's field names, with the bulk
// bytes inside: constant_buffer[i].storage, backend_delegate_data[i].data.
// ReadProgramObjects reads such a tree through an ObjectReader
// (etpack/object_reader.h, which says how each schema value is expected) into
// what PlanPte takes: the structure as a Program flatbuffer built straight
// from the objects, and the bulk bytes as sources that borrow them.

#ifndef ETPACK_PROGRAM_OBJECTS_H_
#define ETPACK_PROGRAM_OBJECTS_H_

#include <string>

#include "etpack/object_reader.h"
#include "etpack/pte.h"
#include "etpack/status.h"

namespace etpack {

// Reads the Program `program` into input->program (flatbuffer form),
// input->constants (constant_buffer[i].storage, by index) and
// input->delegates (backend_delegate_data[i].data), each through
// reader.DataOf(). The fields the planner lays out (segments,
// constant_segment, mutable_data_segments, named_data) are not read.
// input's other members are left as they are. Errors name `path` ("program")
// and the path below it ("program.execution_plan[0].values[3].val.sizes"),
// the type found and the type expected; wrong types and missing attributes
// come from reader.WrongType().
// REQUIRES: input != nullptr.
Status ReadProgramObjects(ObjectReader& reader, ObjectReader::Object program,
                          const std::string& path, PteInput* input);

}  // namespace etpack

#endif  // ETPACK_PROGRAM_OBJECTS_H_
