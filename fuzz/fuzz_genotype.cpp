// Genotype files (registration/genotype.h) on any bytes.
#include <stdexcept>

#include "autoreg/registration/genotype.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autoreg;
  const std::string path = fuzz::as_file(data, size, ".genotype");
  fuzz::expect_clean<std::invalid_argument>([&] {
    const registration::Genotype g = registration::read_genotype(path);
    if (!(registration::Genotype::parse(g.to_string()) == g)) std::abort();  // the text form round-trips
  });
  return 0;
}
