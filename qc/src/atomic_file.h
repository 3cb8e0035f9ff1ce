// Internal to qc/: outputs written through a temporary file renamed into place, so that a
// failure never leaves a partial picture or page (the project's rule, DESIGN.md). The
// same idea as io/'s write_atomically, which qc/ cannot link (io/ brings LibTorch).
#pragma once

#include <functional>
#include <string>

namespace autoreg::qc::detail {

// Runs write(tmp) for a temporary path beside `path` that keeps its extension (ITK
// chooses the image writer by it), then renames tmp onto `path`. On any failure the
// temporary is removed and std::runtime_error("<path>: <why>") is thrown.
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

}  // namespace autoreg::qc::detail
