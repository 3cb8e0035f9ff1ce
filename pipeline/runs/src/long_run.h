// What the long-run jobs (train_job.cpp, search_job.cpp, adapt_job.cpp) share: the
// genotype file they read, the trainer they make, and the supervisor they run under.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autoreg/parallel/ranks.h"
#include "autoreg/registration/genotype.h"
#include "autoreg/registration/train.h"

namespace autoreg::pipeline::detail {

// A --genotype file; one that cannot be read or parsed is an io::IoError naming it.
registration::Genotype read_genotype_file(const std::string& path);

// The trainer of `data`; a set it cannot train on (no pair to draw, ...) is an
// io::IoError naming `manifest`.
std::unique_ptr<registration::Trainer> make_trainer(registration::Model& model, const registration::TrainingSet& data,
                                                    const registration::TrainOptions& options,
                                                    const std::string& manifest);

// A job under its supervisor (s.nproc > 0): `arguments` (the job's to_arguments) run by
// the autoreg command `executable` ("": autoreg_executable()) as each rank.
void supervise_job(std::vector<std::string> arguments, const std::string& executable, const parallel::ScaleOut& s,
                   int threads, const std::string& failures);

}  // namespace autoreg::pipeline::detail
