// The local search restricted to where it can change an answer: the undecided mask holds
// every voxel whose readable labels differ; a restricted search equals the full one where
// it searches; fusion and patch voting after it give the full search's labels, weights and
// labels as read, bit for bit.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "autoreg/segmentation/fusion.h"
#include "search.h"

namespace autoreg::segmentation {
namespace {

// Atlases of a smooth image with a few labels, each moved and disturbed a little: they
// agree in the flat parts and disagree along the boundaries, as registered atlases do.
struct Scene {
  at::Tensor target;
  std::vector<at::Tensor> images, labels;
};

Scene scene(const std::vector<int64_t>& size, int atlases, uint64_t seed) {
  at::manual_seed(seed);
  Scene s;
  const at::Tensor image = at::upsample_trilinear3d(at::rand({1, 1, 3, 3, 3}), size, true)[0][0];
  s.target = image;
  for (int a = 0; a < atlases; ++a) {
    const at::Tensor moved = at::roll(image, {a % 3 - 1}, {a % 3});
    s.images.push_back(moved * (1.0 + 0.1 * a) + 0.03 * at::rand(size));
    s.labels.push_back((moved > 0.4).to(at::kInt) + 2 * (moved > 0.65).to(at::kInt));
  }
  return s;
}

TEST(SearchMask, HoldsEveryVoxelWhoseReadableLabelsDiffer) {
  const Scene sc = scene({14, 17, 19}, 3, 3);
  for (int s : {1, 2}) {
    const at::Tensor mask = detail::undecided(sc.labels, s);
    const auto m = mask.accessor<uint8_t, 3>();
    std::vector<at::TensorAccessor<int, 3>> l;
    for (const auto& x : sc.labels) l.push_back(x.accessor<int, 3>());
    int64_t open = 0, decided = 0;
    for (int64_t z = 0; z < 14; ++z)
      for (int64_t y = 0; y < 17; ++y)
        for (int64_t x = 0; x < 19; ++x) {
          bool same = true;
          for (int64_t u = std::max<int64_t>(0, z - s); u <= std::min<int64_t>(13, z + s); ++u)
            for (int64_t v = std::max<int64_t>(0, y - s); v <= std::min<int64_t>(16, y + s); ++v)
              for (int64_t w = std::max<int64_t>(0, x - s); w <= std::min<int64_t>(18, x + s); ++w)
                for (const auto& a : l) same = same && a[u][v][w] == l[0][z][y][x];
          if (!same) {
            EXPECT_EQ(m[z][y][x], 1) << z << "," << y << "," << x << " s=" << s;
            ++open;
          }
          decided += m[z][y][x] == 0;
        }
    EXPECT_GT(open, 0);
    EXPECT_GT(decided, 0) << "the mask should leave some voxels out";  // else the test proves nothing
  }
  // Crops of bigger maps (as fusion's box is), read where they lie, give their copies' mask.
  std::vector<at::Tensor> crops, copies;
  for (const auto& l : sc.labels) {
    crops.push_back(l.slice(0, 2, 12).slice(1, 3, 15).slice(2, 1, 18));
    copies.push_back(crops.back().contiguous());
  }
  EXPECT_TRUE(at::equal(detail::undecided(crops, 2), detail::undecided(copies, 2)));
  // A grown mask: every voxel within the radius of a marked one.
  at::Tensor one = at::zeros({5, 6, 7}, at::kByte);
  one[2][3][4] = 1;
  const at::Tensor grown = detail::dilated(one, 1);
  EXPECT_EQ(grown.sum().item<int64_t>(), 27);
  EXPECT_EQ(grown.slice(0, 1, 4).slice(1, 2, 5).slice(2, 3, 6).sum().item<int64_t>(), 27);
}

TEST(SearchMask, ARestrictedSearchEqualsTheFullOneWhereItSearches) {
  // W over three tiles; then rows split into chunks (1200 wide: ~10 rows a chunk).
  for (const auto& [size, radii] : std::vector<std::pair<std::vector<int64_t>, std::vector<int>>>{
           {{24, 22, 70}, {1, 2}}, {{6, 26, 1200}, {1}}}) {
    const Scene sc = scene(size, 2, 4);
    for (int s : radii) {
      for (int r : radii) {
        const at::Tensor need = detail::dilated(detail::undecided(sc.labels, s), r);
        const detail::Searched full = detail::search(sc.target, sc.images[0], sc.labels[0], s, r);
        const detail::Searched part = detail::search(sc.target, sc.images[0], sc.labels[0], s, r, need);
        const at::Tensor where = need.to(at::kBool);
        EXPECT_TRUE(at::equal(full.chosen.masked_select(where), part.chosen.masked_select(where)));
        EXPECT_TRUE(at::equal(full.msd.masked_select(where), part.msd.masked_select(where)));
        // Tiles with nothing to search are left alone.
        EXPECT_TRUE(part.msd.isinf().any().item<bool>());
        EXPECT_TRUE(part.chosen.masked_select(part.msd.isinf()).eq(0).all().item<bool>());
      }
    }
  }
  // A mask on another grid is refused.
  const Scene sc = scene({8, 9, 10}, 2, 4);
  EXPECT_THROW(detail::search(sc.target, sc.images[0], sc.labels[0], 1, 1, at::ones({8, 9, 11}, at::kByte)),
               std::invalid_argument);
}

TEST(SearchMask, FusionAfterARestrictedSearchGivesTheFullSearchsAnswers) {
  for (int n : {3, 5}) {
    const Scene sc = scene({30, 32, 40}, n, 10 + n);
    for (const Method m : {Method::Weighted, Method::Jlf}) {
      Options o;
      o.method = m;
      o.search_radius = 2;
      o.patch_radius = 1;
      o.keep_weights = true;
      const at::Tensor open = detail::undecided(sc.labels, o.search_radius);
      const at::Tensor need = detail::dilated(open, o.patch_radius);
      ASSERT_LT(need.to(at::kFloat).mean().item<double>(), 0.95);
      std::vector<detail::Searched> full, part;
      for (int a = 0; a < n; ++a) {
        full.push_back(detail::search(sc.target, sc.images[a], sc.labels[a], o.search_radius, o.patch_radius));
        part.push_back(detail::search(sc.target, sc.images[a], sc.labels[a], o.search_radius, o.patch_radius, need));
      }
      Fused f = detail::fuse_searched(sc.target, full, o);
      Fused p = detail::fuse_searched(sc.target, part, o);
      EXPECT_TRUE(at::equal(f.labels, p.labels));
      EXPECT_TRUE(at::equal(f.weights, p.weights));
      EXPECT_EQ(f.unanimous, p.unanimous);
      for (int a = 0; a < n; ++a) EXPECT_TRUE(at::equal(f.searched_labels[a], p.searched_labels[a]));
      detail::vote_searched_patches(f, full, o);
      detail::vote_searched_patches(p, part, o, open);
      EXPECT_TRUE(at::equal(f.labels, p.labels)) << to_string(m) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace autoreg::segmentation
