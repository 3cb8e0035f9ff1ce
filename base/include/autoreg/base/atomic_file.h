// Outputs written whole or not at all (the project's rule, docs/design.md): every output
// is written to a temporary file beside it and renamed into place, so that a failure or
// a kill never leaves a partial output under the output's name.
//
// One naming scheme for the temporaries, ".autoreg-tmp-<host>-<pid>-<n>-<name>", so that
// the temporaries a killed process left behind can be told from everything else and
// removed: the first write into a folder in a process removes those of this host whose
// process is gone and that were last written over 15 minutes ago (a folder shared by
// several machines keeps the others'; the age guards a process of another PID namespace
// on a host of the same name).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace autoreg::base {

// An output that could not be written: "<path>: <why>".
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fresh temporary path beside `path`, ending in its file name (so that writers that
// choose the format by the extension, as ITK's, still do).
std::string temporary_path(const std::string& path);

// Runs write(tmp) for a temporary path beside `path`, then renames it onto `path`. When
// write throws, the temporary (file or folder) is removed and the exception propagates
// unchanged; a rename that fails throws WriteError.
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

// Writes `bytes` to `path` atomically; WriteError "<path>: cannot write (<why>)".
void write_file_atomically(const std::string& path, std::string_view bytes);

// Removes from `folder` the temporaries of this host whose process has ended and that
// were last written over 15 minutes ago (files or folders, as a killed writer left
// them) and returns how many; errors are ignored (a
// clean-up never stops a run). write_atomically calls it once per folder and process.
int remove_stale_temporaries(const std::string& folder);

}  // namespace autoreg::base
