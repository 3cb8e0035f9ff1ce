#include "autoreg/registration/checkpoint_writer.h"

#include <utility>

namespace autoreg::registration {

CheckpointWriter::~CheckpointWriter() {
  try {
    wait();
  } catch (...) {  // a destructor cannot report it: wait() is where errors are seen
  }
}

void CheckpointWriter::write(const std::string& path, const std::string& kind, Archive archive) {
  wait();
  if (!asynchronous_) {
    write_archive(path, kind, archive);
    return;
  }
  pending_ = std::async(std::launch::async, [path, kind, a = std::move(archive)] { write_archive(path, kind, a); });
}

void CheckpointWriter::wait() {
  if (pending_.valid()) pending_.get();
}

}  // namespace autoreg::registration
