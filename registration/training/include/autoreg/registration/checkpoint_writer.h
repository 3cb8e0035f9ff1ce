// Checkpoints written by a background thread: the run hands over its state (an Archive of
// CPU copies, taken between two steps) and goes on training while the file is written
// (atomically, write_archive). One write is in flight at a time: the next waits for it.
// A failed write is rethrown by the next write() or by wait(), so it is never lost.
#pragma once

#include <future>
#include <string>

#include "autoreg/registration/archive.h"

namespace autoreg::registration {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(bool asynchronous = true) : asynchronous_(asynchronous) {}
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Writes `archive` to `path` (in the background when asynchronous). The archive's
  // tensors must not change afterwards (they are the run's copies, not its weights).
  void write(const std::string& path, const std::string& kind, Archive archive);
  // Until the last write is on disk; throws its error.
  void wait();

 private:
  bool asynchronous_;
  std::future<void> pending_;
};

}  // namespace autoreg::registration
