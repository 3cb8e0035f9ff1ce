#include "autoreg/runs/dataset.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/pair/frame.h"
#include "autoreg/registration/field_box.h"
#include "autoreg/registration/augment.h"

namespace autoreg::pipeline {
namespace {

namespace fs = std::filesystem;

std::string stamp(const std::string& path) {
  if (path.empty()) return "-";
  const fs::path p = fs::absolute(path);
  std::ostringstream s;
  s << p.string() << "|";
  if (fs::is_directory(p)) {
    for (const auto& e : fs::directory_iterator(p)) s << e.path().filename().string() << ":" << e.file_size() << ";";
  } else {
    s << fs::file_size(p) << "|" << fs::last_write_time(p).time_since_epoch().count();
  }
  return s.str();
}

struct Context {
  const registration::ModelInfo& info;
  const DatasetOptions& options;
  std::string reference_stamp;
  io::Volume reference;  // normalised
  io::Geometry frame;
  at::Tensor table;      // label intensities, for subjects without an image
};

std::string cache_key(const Context& c, const io::ManifestRow& row) {
  std::ostringstream s;
  s.precision(17);
  s << "v1|" << stamp(row.image) << "|" << stamp(row.labels) << "|" << c.reference_stamp;
  for (int d = 0; d < 3; ++d) s << "|" << c.info.grid[d] << "|" << c.info.spacing[d];
  s << "|" << c.info.normalization[0] << "|" << c.info.normalization[1] << "|" << c.info.orientation;
  for (auto n : c.options.affine.iterations) s << "|" << n;
  s << "|" << registration::similarity_name(c.options.affine.similarity);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>()(s.str()));
  return hex;
}

std::string name_of(const io::ManifestRow& row) {
  return fs::path(row.image.empty() ? row.labels : row.image).filename().string();
}

// The row's volumes on the frame, from the cache or computed (and then cached).
registration::Subject prepare(const Context& c, const io::ManifestRow& row, bool is_reference) {
  registration::Subject s;
  s.name = name_of(row);
  const fs::path base = fs::path(c.options.cache_dir) / cache_key(c, row);
  const std::string image_file = base.string() + "_image.nii", labels_file = base.string() + "_labels.nii";
  const bool want_image = !row.image.empty(), want_labels = !row.labels.empty();
  if ((!want_image || fs::exists(image_file)) && (!want_labels || fs::exists(labels_file))) {
    if (want_image) s.image = io::read_volume(image_file).data;
    if (want_labels) s.labels = io::read_volume(labels_file, io::PixelKind::Labels).data;
    if (c.options.progress) c.options.progress(s.name + ": from the cache");
    return s;
  }
  const auto started = std::chrono::steady_clock::now();
  io::Volume labels;
  if (want_labels) labels = io::read_volume(row.labels, io::PixelKind::Labels);
  io::Volume image;
  if (want_image) {
    image = io::read_volume(row.image);
    image.data = io::normalize_intensity(image.data, c.info.normalization[0], c.info.normalization[1]);
    if (want_labels && !io::same_grid(labels.geometry, image.geometry)) {
      labels = io::resample(labels, image.geometry, io::Resampling::Nearest);
    }
  } else {
    if (!c.table.defined()) {
      throw std::invalid_argument(row.labels + ": a label map without an image needs subjects with both "
                                  "to learn label intensities from");
    }
    at::manual_seed(0);
    image = io::Volume{registration::synthesize_image(labels.data, c.table), labels.geometry};
  }
  at::Tensor affine = at::eye(4, at::kDouble);
  if (!is_reference) {
    affine = registration::fit_affine(c.reference.data, io::index_to_world(c.reference.geometry), image.data,
                                      io::index_to_world(image.geometry), c.options.affine);
  }
  if (want_image) {
    s.image = on_frame(image, affine, c.frame);
    io::write_volume(image_file, io::Volume{s.image, c.frame});
  }
  if (want_labels) {
    s.labels = on_frame(labels, affine, c.frame);
    io::write_volume(labels_file, io::Volume{s.labels, c.frame});
  }
  if (c.options.progress) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char line[64];
    std::snprintf(line, sizeof line, ": aligned and resampled in %.1f s", seconds);
    c.options.progress(s.name + line);
  }
  return s;
}

}  // namespace

registration::TrainingSet load_training_set(const io::Manifest& manifest, registration::ModelInfo& info,
                                            int64_t size_multiple, const DatasetOptions& options) {
  c10::AutoGradMode no_grad(false);
  const auto atlas_rows = manifest.split("atlas");
  // Counted before anything is read or cached: the Trainer says the same after loading.
  const size_t least = atlas_rows.empty() && !options.one_subject_pairs ? 2 : 1;
  if (manifest.split("train").size() < least) {
    throw std::invalid_argument(manifest.path + (!atlas_rows.empty() ? ": training needs at least one training subject besides the atlas"
                                                 : least == 2 ? ": pairwise training needs at least two training subjects (or one, with augmentation)"
                                                              : ": training needs at least one training subject"));
  }
  io::ManifestRow reference_row;
  if (!atlas_rows.empty()) {
    reference_row = atlas_rows.front();
  } else {
    for (const auto& r : manifest.split("train")) {
      if (!r.image.empty()) {
        reference_row = r;
        break;
      }
    }
    if (reference_row.image.empty()) {
      throw std::invalid_argument(manifest.path + ": no training row has an image to serve as the reference grid");
    }
  }
  std::error_code made;
  fs::create_directories(options.cache_dir, made);
  if (made) throw io::IoError(options.cache_dir + ": cannot create the cache folder (" + made.message() + ")");
  io::Volume reference = io::read_volume(reference_row.image);
  reference.data = io::normalize_intensity(reference.data, info.normalization[0], info.normalization[1]);
  if (info.grid[0] == 0) {
    const registration::Box box = registration::foreground_box(reference.data, reference.data, 0);
    for (int d = 0; d < 3; ++d) {
      const double mm = double(box[d][1] - box[d][0]) * reference.geometry.spacing[2 - d] + 16.0;
      const int64_t n = int64_t(std::ceil(mm / info.spacing[d]));
      info.grid[d] = (n + size_multiple - 1) / size_multiple * size_multiple;
    }
  }
  // The frame's axes: the reference's, kept in the model (register uses them for any input).
  if (info.orientation.empty()) info.orientation = io::orientation_code(reference.geometry);
  Context c{info, options, stamp(reference_row.image), reference, model_frame(reference, info), {}};

  registration::TrainingSet set;
  const auto train_rows = manifest.split("train"), val_rows = manifest.split("val");
  const size_t rows = train_rows.size() + val_rows.size();
  std::vector<std::string> unreadable;
  // A row's subject, or none when it cannot be read and unreadable rows may be skipped.
  const auto tolerant = [&](const io::ManifestRow& r, bool is_reference) -> std::optional<registration::Subject> {
    if (is_reference || options.max_unreadable_fraction <= 0) return prepare(c, r, is_reference);
    try {
      return prepare(c, r, false);
    } catch (const io::IoError& e) {  // unreadable; other failures (a full disk) stop the run
      const std::string what = manifest.path + " line " + std::to_string(r.line) + ": " + e.what();
      unreadable.push_back(what);
      if (options.progress) options.progress("skipped: " + what);
      if (options.skipped) options.skipped(what);
      if (double(unreadable.size()) > options.max_unreadable_fraction * double(rows)) {
        throw io::IoError(manifest.path + ": " + std::to_string(unreadable.size()) + " of " + std::to_string(rows) +
                          " rows cannot be read, more than the " +
                          std::to_string(int(options.max_unreadable_fraction * 100 + 0.5)) +
                          " % allowed; the last: " + what);
      }
      return std::nullopt;
    }
  };
  if (!atlas_rows.empty()) set.atlas = prepare(c, atlas_rows.front(), true);
  // Rows with an image first (labels-only rows need the label intensities of those).
  std::vector<std::optional<registration::Subject>> train(train_rows.size()), val(val_rows.size());
  for (size_t i = 0; i < train_rows.size(); ++i) {
    const auto& r = train_rows[i];
    if (!r.image.empty()) train[i] = tolerant(r, r.image == reference_row.image && r.split == reference_row.split);
  }
  for (size_t i = 0; i < val_rows.size(); ++i) {
    if (!val_rows[i].image.empty()) val[i] = tolerant(val_rows[i], false);
  }
  // Label intensities from every subject with both, on the frame.
  std::vector<at::Tensor> images, labels;
  for (const auto* group : {&train, &val}) {
    for (const auto& s : *group) {
      if (s && s->image.defined() && s->labels.defined()) {
        images.push_back(s->image);
        labels.push_back(s->labels);
      }
    }
  }
  if (set.atlas && set.atlas->labels.defined()) {
    images.push_back(set.atlas->image);
    labels.push_back(set.atlas->labels);
  }
  if (!images.empty()) set.intensity_table = registration::label_intensity_table(images, labels);
  c.table = set.intensity_table;
  // Then labels-only rows, in their places.
  for (size_t i = 0; i < train_rows.size(); ++i) {
    if (train_rows[i].image.empty()) train[i] = tolerant(train_rows[i], false);
    if (train[i]) set.train.push_back(*train[i]);
  }
  for (size_t i = 0; i < val_rows.size(); ++i) {
    if (val_rows[i].image.empty()) val[i] = tolerant(val_rows[i], false);
    if (val[i]) set.validation.push_back(*val[i]);
  }
  return set;
}

}  // namespace autoreg::pipeline
