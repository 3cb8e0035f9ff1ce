#include "autoreg/runs/pack_job.h"

#include <filesystem>
#include <stdexcept>

#include "autoreg/base/errors.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/runs/dataset.h"
#include "autoreg/registration/training_set_file.h"

namespace autoreg::pipeline {
namespace {

int64_t size_multiple(const PackJob& job) { return job.unet ? 16 : 4; }

}  // namespace

void validate(const PackJob& job) {
  if (!(job.spacing > 0)) throw base::UsageError("--spacing must be > 0");
  if (!(job.max_unreadable >= 0 && job.max_unreadable < 1)) throw base::UsageError("--max-unreadable must be in [0, 1)");
  if (!job.grid) return;
  for (int64_t size : *job.grid) {
    if (size % size_multiple(job) != 0) {
      throw base::UsageError(std::string("--grid: the ") + (job.unet ? "unet" : "autoreg") +
                             " network needs sizes that are multiples of " + std::to_string(size_multiple(job)));
    }
  }
}

const base::Schema<PackJob>& pack_schema() {
  using J = PackJob;
  static const base::Schema<J> schema{
      base::text_field<J>("manifest", "manifest", "FILE", "CSV manifest (image,labels,split; test rows are left out)",
                          &J::manifest, true),
      base::text_field<J>("out", "out", "FILE", "the training set file to write", &J::out, true),
      {"grid", "grid", "DxHxW", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)",
       [](const J& j) { return j.grid ? grid_text(*j.grid) : std::string(); },
       [](J& j, const std::string& t) { j.grid = parse_grid(t); }},
      base::number_field<J>("spacing", "spacing", "MM", "model grid spacing in mm", &J::spacing),
      base::switch_field<J>("unet", "unet", "for the U-Net (grid sizes multiples of 16, not 4)", &J::unet),
      base::text_field<J>("cache", "cache", "DIR", "folder for preprocessed volumes (default <out>.cache)", &J::cache),
      base::number_field<J>("max_unreadable", "max-unreadable", "F",
                            "share of rows that may be unreadable (reported and skipped)", &J::max_unreadable)};
  return schema;
}

PackResult pack(const PackJob& job) {
  validate(job);  // usage errors before any work
  io::check_output(job.out);
  registration::ModelInfo info;
  info.network.kind = job.unet ? "unet" : "autoreg";
  info.spacing = {job.spacing, job.spacing, job.spacing};
  info.grid = job.grid ? *job.grid : std::array<int64_t, 3>{0, 0, 0};
  const io::Manifest rows = io::read_manifest(job.manifest);
  DatasetOptions dataset;
  dataset.cache_dir = job.cache.empty() ? job.out + ".cache" : job.cache;
  dataset.max_unreadable_fraction = job.max_unreadable;
  dataset.progress = job.progress ? job.progress : [](const std::string&) {};
  registration::TrainingSet data;
  try {
    data = load_training_set(rows, info, size_multiple(job), dataset);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(e.what());
  }
  try {
    registration::write_training_set(job.out, data, info);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(job.manifest + ": " + e.what());
  }
  PackResult r;
  r.train = data.train.size();
  r.validation = data.validation.size();
  r.atlas = data.atlas.has_value();
  r.grid = info.grid;
  r.spacing = info.spacing[0];
  std::error_code ec;
  r.bytes = std::filesystem::file_size(job.out, ec);
  if (ec) r.bytes = 0;
  return r;
}

}  // namespace autoreg::pipeline
