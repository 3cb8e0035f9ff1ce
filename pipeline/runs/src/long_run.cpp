#include "long_run.h"

#include <stdexcept>

#include "autoreg/io/volume.h"
#include "autoreg/runs/executable.h"

namespace autoreg::pipeline::detail {

registration::Genotype read_genotype_file(const std::string& path) {
  try {
    return registration::read_genotype(path);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(e.what());
  }
}

std::unique_ptr<registration::Trainer> make_trainer(registration::Model& model, const registration::TrainingSet& data,
                                                    const registration::TrainOptions& options,
                                                    const std::string& manifest) {
  try {
    return std::make_unique<registration::Trainer>(model, data, options);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(manifest + ": " + e.what());
  }
}

void supervise_job(std::vector<std::string> arguments, const std::string& executable, const parallel::ScaleOut& s,
                   int threads, const std::string& failures) {
  const std::string label = "autoreg " + arguments.front();
  arguments.insert(arguments.begin(), executable.empty() ? autoreg_executable() : executable);
  parallel::supervise(s, arguments, threads, failures, label);
}

}  // namespace autoreg::pipeline::detail
