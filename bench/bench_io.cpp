// Google Benchmark: writing a 256×256×160 volume and displacement field as .nii.gz the
// way autoreg writes them now (io/src/nifti_file.h: header and voxels straight from the
// tensor, gzip level 1 in parallel blocks) against ITK's own writer (zlib level 1, one
// thread) and against the previous path (ITK writes the plain .nii, then it is gzipped in
// parallel blocks); and warping an image and a label map through a displacement field in
// one pass (io::sample_mapped) against sample_at on volume-sized point tensors. The
// image is OASIS-TRT subject 08 when ../shared/data is there (else a synthetic head);
// the field is an affine plus a smooth deformation of a few voxels, as registration
// writes. Each iteration writes a new file (a temporary folder, removed at the end).
//
//   build/bin/autoreg_bench_io [--threads N] [google benchmark flags]
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <itkImageFileWriter.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "gzip_file.h"
#include "itk_bridge.h"
#include "shared_data.h"

namespace {

namespace fs = std::filesystem;
namespace io = autoreg::io;
using FieldImage = itk::Image<itk::Vector<float, 3>, 3>;

struct Data {
  io::Volume image, labels;
  at::Tensor field;  // voxels, 1×3×D×H×W
  at::Tensor affine;
  fs::path dir;
};

Data& data() {
  static Data d = [] {
    Data out;
    const fs::path t1 = autoreg::test::shared_data() / "oasis_trt" / "oasis08_t1.nii.gz";
    const fs::path labels = autoreg::test::shared_data() / "oasis_trt" / "oasis08_labels.nii.gz";
    if (fs::exists(t1) && fs::exists(labels)) {
      out.image = io::read_volume(t1.string());
      out.labels = io::read_volume(labels.string(), io::PixelKind::Labels);
    } else {
      io::Geometry g;
      g.size = {256, 256, 160};
      const at::Tensor z = at::linspace(-1, 1, 160).view({-1, 1, 1}), y = at::linspace(-1, 1, 256).view({1, -1, 1}),
                       x = at::linspace(-1, 1, 256).view({1, 1, -1});
      const at::Tensor r = (x * x + y * y + z * z).sqrt();
      out.image = {((r < 0.8).to(at::kFloat) * (100 + 20 * at::randn({160, 256, 256}))).view({1, 1, 160, 256, 256}), g};
      out.labels = {(r * 40).clamp_max(35).to(at::kInt).view({1, 1, 160, 256, 256}), g};
    }
    const auto& s = out.image.geometry.size;
    at::manual_seed(0);
    const at::Tensor coarse = (at::rand({1, 3, 6, 6, 6}) * 2 - 1) * 3;
    out.affine = at::tensor({0.97, 0.06, -0.03, 1.5, -0.04, 1.03, 0.05, -2.25, 0.02, -0.05, 0.96, 0.75, 0.0, 0.0, 0.0, 1.0},
                            at::kDouble)
                     .view({4, 4});
    const at::Tensor u = at::upsample_trilinear3d(coarse, {s[2], s[1], s[0]}, true).contiguous();
    out.field = io::compose_affine(out.image.geometry, out.affine, u);
    out.dir = fs::temp_directory_path() / ("autoreg-bench-io-" + std::to_string(::getpid()));
    fs::create_directories(out.dir);
    return out;
  }();
  return d;
}

std::string next_path(const char* name) {
  static int counter = 0;
  return (data().dir / (std::to_string(counter++) + "-" + name)).string();
}

template <typename ImageT>
void itk_write(const std::string& file, const ImageT* image, bool compress) {
  auto writer = itk::ImageFileWriter<ImageT>::New();
  writer->SetFileName(file);
  writer->SetInput(image);
  writer->SetUseCompression(compress);
  writer->SetCompressionLevel(1);
  writer->Update();
}

void report(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["MB"] = double(bytes) / 1e6;
}

void BM_write_image_ours(benchmark::State& state) {
  for (auto _ : state) io::write_volume(next_path("w.nii.gz"), data().image);
  report(state, data().image.data.nbytes());
}

void BM_write_image_itk_zlib(benchmark::State& state) {
  for (auto _ : state) itk_write(next_path("w.nii.gz"), autoreg::io::detail::to_itk<float>(data().image).GetPointer(), true);
  report(state, data().image.data.nbytes());
}

void BM_write_image_itk_then_gzip(benchmark::State& state) {
  for (auto _ : state) {
    const std::string plain = next_path("w.nii");
    itk_write(plain, autoreg::io::detail::to_itk<float>(data().image).GetPointer(), false);
    autoreg::io::detail::gzip_file(plain, plain + ".gz", 1, at::get_num_threads());
    fs::remove(plain);
  }
  report(state, data().image.data.nbytes());
}

void BM_write_field_ours(benchmark::State& state) {
  for (auto _ : state) io::write_displacement_field(next_path("f.nii.gz"), data().field, data().image.geometry);
  report(state, data().field.nbytes());
}

void BM_write_field_ours_plain(benchmark::State& state) {
  for (auto _ : state) io::write_displacement_field(next_path("f.nii"), data().field, data().image.geometry);
  report(state, data().field.nbytes());
}

void BM_write_field_itk_zlib(benchmark::State& state) {
  for (auto _ : state) {
    const auto image = autoreg::io::detail::field_image<FieldImage>(data().field, data().image.geometry, at::kFloat);
    itk_write(next_path("f.nii.gz"), image.GetPointer(), true);
  }
  report(state, data().field.nbytes());
}

void BM_write_field_itk_then_gzip(benchmark::State& state) {
  for (auto _ : state) {
    const std::string plain = next_path("f.nii");
    const auto image = autoreg::io::detail::field_image<FieldImage>(data().field, data().image.geometry, at::kFloat);
    itk_write(plain, image.GetPointer(), false);
    autoreg::io::detail::gzip_file(plain, plain + ".gz", 1, at::get_num_threads());
    fs::remove(plain);
  }
  report(state, data().field.nbytes());
}

void BM_warp_mapped(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(io::sample_mapped(d.image, d.image.geometry, at::Tensor(), d.field));
    benchmark::DoNotOptimize(io::sample_mapped(d.labels, d.image.geometry, at::Tensor(), d.field));
  }
}

void BM_warp_sample_at(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) {
    const at::Tensor x = io::physical_points(d.image.geometry);
    const at::Tensor points = x + io::voxel_to_physical(d.field, d.image.geometry);
    benchmark::DoNotOptimize(io::sample_at(d.image, points));
    benchmark::DoNotOptimize(io::sample_at(d.labels, points));
  }
}

}  // namespace

BENCHMARK(BM_write_image_ours)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_write_image_itk_zlib)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_write_image_itk_then_gzip)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_write_field_ours)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_write_field_ours_plain)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_write_field_itk_zlib)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_write_field_itk_then_gzip)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_warp_mapped)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_warp_sample_at)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
  }
  // As `autoreg register` runs: freed memory kept, no huge pages (apps/main.cpp).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  setenv("THP_MEM_ALLOC_ENABLE", "0", /*overwrite=*/0);
  at::set_num_threads(threads);
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(data().dir);
  return 0;
}
