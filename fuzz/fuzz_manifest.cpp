// Dataset manifests (io/manifest.h) on any bytes.
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autoreg;
  const std::string path = fuzz::as_file(data, size, ".csv");
  fuzz::expect_clean<io::IoError>([&] { io::read_manifest(path); });
  return 0;
}
