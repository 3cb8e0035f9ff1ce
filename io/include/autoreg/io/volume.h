// Volumes and label maps in and out of files, with their geometry.
//
// The one place that converts between ITK images and tensors (docs/design.md, "Conventions"): a volume is
// a tensor 1×1×D×H×W whose index [k][j][i] is the ITK image index (i, j, k), so W runs
// along ITK's x index; its geometry is ITK's (origin, spacing, direction, in the
// physical LPS frame, millimetres). Reads every scalar format ITK reads here (NIfTI
// .nii/.nii.gz, MetaImage .mha/.mhd, NRRD .nrrd/.nhdr) and a DICOM series given as a
// directory. Writes atomically: a failure never leaves a partial file behind.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace autoreg::io {

// A file that cannot be read or written, or holds something other than what is
// needed. The message starts with the file name.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Geometry {
  std::array<int64_t, 3> size{0, 0, 0};                        // voxels along i, j, k
  std::array<double, 3> spacing{1, 1, 1};                      // mm along i, j, k
  std::array<double, 3> origin{0, 0, 0};                       // mm, LPS, of voxel (0,0,0)
  std::array<double, 9> direction{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major; column c = axis c
};

enum class PixelKind {
  Intensity,  // float32; non-finite voxels are rejected
  Labels,     // int32 label values, read without interpolation or rescaling
};

struct Volume {
  at::Tensor data;  // 1×1×D×H×W on the CPU: float32 (Intensity) or int32 (Labels)
  Geometry geometry;
};

// The most bytes one input volume may take in memory (its voxels as float32 or int32, or
// as the file's type where that is wider): a header that declares more is refused with
// IoError naming the file and the size, before anything is allocated, so a corrupt or
// hostile header cannot make a command allocate gigabytes. Default: a quarter of the
// machine's physical memory, or AUTOREG_MAX_VOLUME_GB (in GiB) where it is set; the
// setter overrides both (0 restores the default).
uint64_t max_volume_bytes();
void set_max_volume_bytes(uint64_t bytes);

// Reads a 3-D scalar volume (a file, or a directory holding one DICOM series).
Volume read_volume(const std::string& path, PixelKind kind = PixelKind::Intensity);

// The geometry of a 3-D scalar volume from its header alone (voxels are not read, except
// for a DICOM series).
Geometry read_geometry(const std::string& path);

// Throws IoError unless `path` can be written: its folder exists and is writable. For
// commands to check every output before long work.
void check_output(const std::string& path);

// Writes data (float32 or int32, 1×1×D×H×W, D×H×W matching the geometry's size) in the
// format the extension names, through a temporary file renamed into place.
void write_volume(const std::string& path, const Volume& volume);

}  // namespace autoreg::io
