// Volumes through io::read_volume (ITK's header parsing and the checks io/ adds after it):
// the first byte picks the format (.nii, .nii.gz, .mha, .nrrd); each input is read as an
// intensity volume, as a label map, and as a displacement field.
#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autoreg;
  if (size < 1) return 0;
  // Keep a header's declared size from allocating more than libFuzzer's memory limit.
  io::set_max_volume_bytes(uint64_t(64) << 20);
  static const char* kExt[] = {".nii", ".nii.gz", ".mha", ".nrrd"};
  const std::string path = fuzz::as_file(data + 1, size - 1, kExt[data[0] % 4]);
  fuzz::expect_clean<io::IoError>([&] { io::read_volume(path); });
  fuzz::expect_clean<io::IoError>([&] { io::read_volume(path, io::PixelKind::Labels); });
  fuzz::expect_clean<io::IoError>([&] { io::read_displacement_field(path); });
  return 0;
}
