// The error rt/ throws for DICOM input that cannot be used: a file that is not what it
// should be (not an RT Structure Set, not one series), a value out of range, references
// that do not match. Bad input as io::IoError is (exit 2 on the command line); outputs
// that cannot be written throw base::WriteError.
#pragma once

#include <stdexcept>

namespace autoreg::rt {

// "<file or folder>: <what, naming the object at fault (ROI, contour, slice file)>".
class DicomError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace autoreg::rt
