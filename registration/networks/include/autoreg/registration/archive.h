// The container of model files and training checkpoints: a text header that says what
// the file is (readable with `head`), then the tensors' bytes.
//
//   AUTOREG <KIND>                      KIND: MODEL, CHECKPOINT, SEARCH or TRAINING_SET
//   format 3                            the oldest format that holds what the file holds
//   <key> <value>                       any number of fields, one per line
//   tensor <name> <dtype> <ndim> <sizes...>   dtype: float32, float64, int64, int32 or int16
//   checksum <16 hex digits>            FNV-1a 64 of the lines above and the data
//   data <bytes>
//   <the tensors' bytes, little-endian, in the order listed>
//
// Nothing in it is executable. Reading checks the kind, the format version, the header's
// syntax, the size (a truncated file is named as such) and the checksum. Format 1 files
// (whose checksum covers the data alone) are still read. Format 3 is format 2's syntax
// for content an older autoreg would misread: a model with feature-wise transformation
// layers (model_file.h); files without such content are still written as format 2.
#pragma once

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace autoreg::registration {

// A model or checkpoint file that cannot be read or written, or is not what it should
// be. The message starts with the file name.
class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kArchiveFormat = 3;  // the newest version read and written

struct Archive {
  int format = 2;  // written as; 3 for content only format 3 readers understand
  std::vector<std::pair<std::string, std::string>> fields;  // keys without spaces
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // CPU copies are written

  // The value of `key`; throws ModelFileError (naming `path`) when absent.
  const std::string& field(const std::string& key, const std::string& path) const;
  bool has_field(const std::string& key) const;
};

// Writes through a temporary file renamed into place.
void write_archive(const std::string& path, const std::string& kind, const Archive& archive);
// Reads a file written by write_archive with this `kind`.
Archive read_archive(const std::string& path, const std::string& kind);

}  // namespace autoreg::registration
