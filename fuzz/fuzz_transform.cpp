// ITK transform files through io/: the first byte picks the format (.tfm, .txt, .mat, .h5);
// .h5 files are also read as displacement-field transforms.
#include "autoreg/io/field.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autoreg;
  if (size < 1) return 0;
  static const char* kExt[] = {".tfm", ".txt", ".mat", ".h5"};
  const std::string ext = kExt[data[0] % 4];
  const std::string path = fuzz::as_file(data + 1, size - 1, ext);
  fuzz::expect_clean<io::IoError>([&] { io::read_affine(path); });
  if (ext == ".h5") fuzz::expect_clean<io::IoError>([&] { io::read_displacement_field(path); });
  return 0;
}
