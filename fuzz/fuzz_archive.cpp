// Model files and checkpoints (one container, registration/archive.h): load_model and the
// checkpoint reader on any bytes.
#include "autoreg/registration/archive.h"
#include "autoreg/registration/model_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autoreg;
  const std::string path = fuzz::as_file(data, size, ".autoreg");
  fuzz::expect_clean<registration::ModelFileError>([&] { registration::load_model(path); });
  fuzz::expect_clean<registration::ModelFileError>([&] { registration::read_archive(path, "CHECKPOINT"); });
  return 0;
}
