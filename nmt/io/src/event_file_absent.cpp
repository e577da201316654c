// A build without protobuf (see cmake/AttnlabDependencies.cmake): no event files; metrics.jsonl
// and the evaluation records hold the same figures.
#include "attnlab/error.h"
#include "attnlab/nmt/io/event_file.h"

namespace attnlab::nmt {

bool event_files_built() { return false; }

EventFileWriter::EventFileWriter(const std::string& dir, const std::string&, std::optional<std::int64_t>) {
  throw Error(fmt::format("cannot write TensorBoard event files in '{}': attnlab was built without protobuf "
                          "(install libprotobuf-dev protobuf-compiler and build again)",
                          dir));
}

void EventFileWriter::scalar(const std::string&, std::int64_t, double) {}

void EventFileWriter::append(const std::string&) {}

}  // namespace attnlab::nmt
