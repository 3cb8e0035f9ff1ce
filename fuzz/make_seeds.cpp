// Writes the fuzz targets' seed corpora, small valid files made here in code (nothing is
// copied from ../shared/data): autoreg_fuzz_seeds OUT_DIR [SOURCE_DIR] writes
// OUT_DIR/<target>/<name> for the targets archive, manifest, genotype, transform and
// volume. Targets whose first byte picks a format get that byte prefixed.
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "autoreg/io/field.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/archive.h"
#include "autoreg/registration/genotype.h"

namespace fs = std::filesystem;
using namespace autoreg;

namespace {

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A file written by `write` at a scratch path with extension `ext`, stored under
// `target/name` with the format-choosing byte `pick` in front (pick < 0: none).
template <typename Write>
void seed(const fs::path& out, const std::string& target, const std::string& name, const std::string& ext, int pick,
          const Write& write) {
  const fs::path scratch = out / ".scratch" / ("seed" + ext);
  fs::create_directories(scratch.parent_path());
  write(scratch.string());
  put(out / target / name, (pick < 0 ? std::string() : std::string(1, char(pick))) + bytes_of(scratch));
  fs::remove(scratch);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: autoreg_fuzz_seeds OUT_DIR [SOURCE_DIR]\n";
    return 1;
  }
  const fs::path out = argv[1];
  at::manual_seed(0);
  // Volumes: an oblique 6×5×4 grid, float intensities, int labels, a field.
  io::Geometry g;
  g.size = {6, 5, 4};
  g.spacing = {1.5, 1.0, 2.0};
  g.origin = {-3, 4, 1};
  g.direction = {0, -1, 0, 1, 0, 0, 0, 0, 1};
  const at::Tensor image = at::rand({1, 1, 4, 5, 6});
  const at::Tensor labels = (image * 4).floor().to(at::kInt);
  const at::Tensor field = at::rand({1, 3, 4, 5, 6}) - 0.5;
  const char* exts[] = {".nii", ".nii.gz", ".mha", ".nrrd"};
  for (int e = 0; e < 4; ++e) {
    const std::string ext = exts[e];
    seed(out, "volume", "image" + ext, ext, e, [&](const std::string& p) { io::write_volume(p, {image, g}); });
    seed(out, "volume", "labels" + ext, ext, e, [&](const std::string& p) { io::write_volume(p, {labels, g}); });
    seed(out, "volume", "field" + ext, ext, e, [&](const std::string& p) { io::write_displacement_field(p, field, g); });
  }
  // Transforms: an affine in each format, a field transform in .h5.
  at::Tensor affine = at::eye(4, at::kDouble);
  affine[0][1] = 0.1;
  affine[1][3] = 4.5;
  const char* tfm[] = {".tfm", ".txt", ".mat", ".h5"};
  for (int e = 0; e < 4; ++e) {
    seed(out, "transform", std::string("affine") + tfm[e], tfm[e], e, [&](const std::string& p) { io::write_affine(p, affine); });
  }
  seed(out, "transform", "field.h5", ".h5", 3, [&](const std::string& p) { io::write_displacement_field(p, field, g); });
  // Archives: a small model container and a checkpoint one; the start of the default
  // model when the source tree is given.
  for (const char* kind : {"MODEL", "CHECKPOINT"}) {
    registration::Archive a;
    a.fields = {{"format", "2"}, {"network", "autoreg"}, {"genotype", registration::Genotype::standard().to_string()},
                {"grid", "16 16 16"}, {"spacing_mm", "2 2 2"}};
    a.tensors = {{"param/w", at::rand({2, 3})}, {"adam/0/step", at::ones({1})}};
    seed(out, "archive", std::string("small_") + kind, ".autoreg", -1,
         [&](const std::string& p) { registration::write_archive(p, kind, a); });
  }
  if (argc > 2) {
    const std::string model = bytes_of(fs::path(argv[2]) / "models" / "default.autoreg");
    put(out / "archive" / "default_head", model.substr(0, std::min<size_t>(model.size(), 4096)));
  }
  // Manifests and genotypes.
  put(out / "manifest" / "pairs.csv", "image,labels,split\na.nii.gz,a_seg.nii.gz,train\n,b_seg.nii.gz,val\n");
  put(out / "manifest" / "quoted.csv", "# subjects\n\"labels\",image\n\"x, y.nii\",z.nii\n\nsplit\n");
  put(out / "genotype" / "standard", registration::Genotype::standard().to_string() + "\n");
  put(out / "genotype" / "searched", "conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3 conv_3x3\nconv_3x3 conv_3x3 conv_3x3 conv_1x1 conv_1x1 conv_3x3\n");
  fs::remove_all(out / ".scratch");
  std::cout << "seeds written to " << out.string() << "\n";
  return 0;
}
