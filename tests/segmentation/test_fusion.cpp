// Label fusion on small synthetic atlases: the majority vote and its tie rule; the
// weighted vote following the atlas that matches the target; joint label fusion sharing
// one weight between atlases that make the same errors (where the weighted vote is
// outvoted by them); local normalisation ignoring an atlas's gain and offset; slabs
// giving the one-block result; probabilities; refusals.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <tuple>

#include "autoreg/segmentation/fusion.h"
#include "local_stats.h"
#include "search.h"

namespace autoreg::segmentation {
namespace {

at::Tensor labels_of(std::initializer_list<int> v, int64_t d, int64_t h, int64_t w) {
  return at::tensor(std::vector<int>(v), at::kInt).reshape({d, h, w});
}

// The methods as Wang et al. and Artaechevarria et al. define them, voxel by voxel:
// no local search, no patch voting (the defaults add both; tested on their own below),
// with the α chosen for them.
Options per_voxel() {
  Options o;
  o.search_radius = 0;
  o.patch_vote = false;
  o.alpha = 0.1;  // the voxel-by-voxel setting
  return o;
}

TEST(Fusion, MajorityVoteAndItsTieRule) {
  // Four voxels: a 2:1 majority, a three-way tie, unanimity, and a tie with background.
  Atlases a;
  a.labels = {labels_of({2, 3, 4, 0}, 1, 1, 4), labels_of({2, 5, 4, 6}, 1, 1, 4), labels_of({5, 7, 4, 6}, 1, 1, 4),
              labels_of({9, 8, 4, 0}, 1, 1, 4)};
  for (size_t i = 0; i < a.labels.size(); ++i) a.images.push_back(at::zeros({1, 1, 4}));
  Options o = per_voxel();
  o.method = Method::Majority;
  const Fused f = fuse(at::zeros({1, 1, 4}), a, o);
  const auto l = f.labels.flatten();
  EXPECT_EQ(l[0].item<int>(), 2);  // 2 2 5 9
  EXPECT_EQ(l[1].item<int>(), 3);  // 3 5 7 8: a tie of four, the smallest label
  EXPECT_EQ(l[2].item<int>(), 4);  // unanimous
  EXPECT_EQ(l[3].item<int>(), 0);  // 0 6 6 0: a tie, background is the smaller label
  EXPECT_EQ(f.unanimous, 1);
  EXPECT_EQ(label_values(a), (std::vector<int64_t>{0, 2, 3, 4, 5, 6, 7, 8, 9}));
}

// A region where two atlases hold a wrong label (1) and one the right one (2), everything
// else labelled 0 by all.
struct Disagreement {
  Atlases atlases;
  at::Tensor target;
  at::Tensor region;  // bool, D×H×W
};

Disagreement disagreement(const std::vector<at::Tensor>& errors) {
  Disagreement s;
  const int64_t n = 16;
  s.target = at::zeros({n, n, n});
  s.region = at::zeros({n, n, n}, at::kBool);
  s.region.slice(0, 4, 12).slice(1, 4, 12).slice(2, 4, 12).fill_(true);
  for (size_t a = 0; a < errors.size(); ++a) {
    s.atlases.images.push_back(s.target + errors[a]);
    s.atlases.labels.push_back(s.region.to(at::kInt) * (a + 1 < errors.size() ? 1 : 2));
  }
  return s;
}

double share(const Fused& f, const Disagreement& s, int label) {
  return f.labels.masked_select(s.region).eq(label).to(at::kFloat).mean().item<double>();
}

TEST(Fusion, WeightedVoteFollowsTheAtlasThatMatchesTheTarget) {
  at::manual_seed(1);
  const int64_t n = 16;
  // Two poor atlases (noise of σ 1) hold label 1, a good one (σ 0.1) holds 2.
  Disagreement s = disagreement({at::randn({n, n, n}), at::randn({n, n, n}), 0.1 * at::randn({n, n, n})});
  Options o = per_voxel();
  o.normalise = false;
  o.method = Method::Majority;
  EXPECT_EQ(share(fuse(s.target, s.atlases, o), s, 1), 1.0);
  o.method = Method::Weighted;
  EXPECT_GT(share(fuse(s.target, s.atlases, o), s, 2), 0.99);
}

TEST(Fusion, JointFusionSharesOneWeightBetweenAtlasesThatErrAlike) {
  at::manual_seed(2);
  const int64_t n = 16;
  // Atlases 0 and 1 make the same errors (σ 1) and hold the wrong label; atlas 2 errs
  // independently and a little less (σ 0.9) and holds the right one. The weighted vote
  // counts the twins twice and follows them; JLF sees they are one opinion.
  const at::Tensor twin = at::randn({n, n, n});
  Disagreement s = disagreement({twin, twin.clone(), 0.9 * at::randn({n, n, n})});
  Options o = per_voxel();
  o.normalise = false;
  o.patch_radius = 3;
  o.alpha = 1e-3;
  o.method = Method::Weighted;
  EXPECT_GT(share(fuse(s.target, s.atlases, o), s, 1), 0.75);
  o.method = Method::Jlf;
  o.keep_weights = true;
  const Fused f = fuse(s.target, s.atlases, o);
  EXPECT_GT(share(f, s, 2), 0.9);
  // The twins' weights are equal, and the weights sum to 1.
  EXPECT_TRUE(at::allclose(f.weights[0], f.weights[1], 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(f.weights.sum(0), at::ones({n, n, n}), 1e-4, 1e-5));
}

TEST(Fusion, LocalNormalisationIgnoresAnAtlasGainAndOffset) {
  at::manual_seed(3);
  const int64_t n = 12;
  const at::Tensor target = at::rand({n, n, n});
  Atlases a, scaled;
  for (int k = 0; k < 3; ++k) {
    const at::Tensor image = target + 0.3 * at::randn({n, n, n});
    const at::Tensor labels = at::randint(0, 3, {n, n, n}, at::kInt);
    a.images.push_back(image);
    a.labels.push_back(labels);
    scaled.images.push_back(image * (k + 2.0) + 100.0 * k);
    scaled.labels.push_back(labels);
  }
  for (Method m : {Method::Weighted, Method::Jlf}) {
    Options o = per_voxel();
    o.method = m;
    o.keep_weights = true;
    const Fused f = fuse(target, a, o), g = fuse(target, scaled, o);
    EXPECT_TRUE(at::allclose(f.weights, g.weights, 1e-3, 1e-4)) << to_string(m);
  }
  // The local z-score itself: zero mean over a box in a linear ramp's interior.
  const at::Tensor ramp = at::arange(n * n * n, at::kFloat).reshape({n, n, n});
  EXPECT_NEAR(detail::local_zscore(ramp, 1, 0.0, 1e-3)[5][5][5].item<double>(), 0.0, 1e-4);
}

TEST(Fusion, SlabsGiveTheOneBlockResult) {
  at::manual_seed(4);
  const std::vector<int64_t> size{13, 10, 9};
  const at::Tensor target = at::rand(size);
  Atlases a;
  for (int k = 0; k < 4; ++k) {
    a.images.push_back(target + 0.2 * at::randn(size));
    a.labels.push_back(at::randint(0, 4, size, at::kShort));  // any integer type
  }
  for (Method m : {Method::Majority, Method::Weighted, Method::Jlf}) {
    Options o = per_voxel();
    o.method = m;
    o.keep_weights = true;
    const Fused whole = fuse(target, a, o);
    o.slab_planes = 2;
    const Fused slabs = fuse(target, a, o);
    EXPECT_TRUE(at::equal(whole.labels, slabs.labels)) << to_string(m);
    EXPECT_TRUE(at::allclose(whole.weights, slabs.weights, 1e-5, 1e-6)) << to_string(m);
    EXPECT_EQ(whole.unanimous, slabs.unanimous);
  }
}

TEST(Fusion, OnlyTheBoxWhereAtlasesDisagreeIsComputedWithTheSameResult) {
  at::manual_seed(6);
  const std::vector<int64_t> size{20, 18, 16};
  const at::Tensor target = at::rand(size);
  Atlases a;
  for (int k = 0; k < 4; ++k) {
    a.images.push_back(target + 0.2 * at::randn(size));
    at::Tensor l = at::ones(size, at::kInt);  // all agree on 1 but in a small box
    l.slice(0, 6, 11).slice(1, 5, 9).slice(2, 7, 12).copy_(at::randint(0, 4, {5, 4, 5}, at::kInt));
    a.labels.push_back(l);
  }
  for (Method m : {Method::Majority, Method::Weighted, Method::Jlf}) {
    Options o = per_voxel();
    o.method = m;
    o.keep_weights = true;
    const Fused box = fuse(target, a, o);
    o.crop = false;
    const Fused whole = fuse(target, a, o);
    EXPECT_TRUE(at::equal(box.labels, whole.labels)) << to_string(m);
    EXPECT_TRUE(at::allclose(box.weights, whole.weights, 1e-5, 1e-6)) << to_string(m);
    EXPECT_EQ(box.unanimous, whole.unanimous) << to_string(m);
  }
}

TEST(Fusion, ProbabilitiesOfAllLabelsSumToOne) {
  at::manual_seed(5);
  const std::vector<int64_t> size{8, 8, 8};
  const at::Tensor target = at::rand(size);
  Atlases a;
  for (int k = 0; k < 5; ++k) {
    a.images.push_back(target + 0.2 * at::randn(size));
    a.labels.push_back(at::randint(0, 3, size, at::kInt));
  }
  a.labels[0][0][0][0] = 7;  // a label only one atlas holds
  Options o = per_voxel();
  o.method = Method::Weighted;
  o.keep_weights = true;
  const Fused f = fuse(target, a, o);
  at::Tensor total = at::zeros(size);
  for (int64_t l : label_values(a)) {
    const at::Tensor p = probability(f, a, l);
    EXPECT_GE(p.min().item<double>(), 0);
    EXPECT_LE(p.max().item<double>(), 1);
    total += p;
    // The fused label is the most probable one.
    EXPECT_TRUE(p.masked_select(f.labels.eq(l)).ge(1.0 / 5 - 1e-6).all().item<bool>());
  }
  EXPECT_TRUE(at::allclose(total, at::ones(size), 1e-5, 1e-5));
  o.keep_weights = false;
  EXPECT_THROW(probability(fuse(target, a, o), a, 1), std::invalid_argument);
}

TEST(Fusion, LocalSearchReadsAtlasesThatRegistrationLeftAVoxelOff) {
  // Atlases that are the target moved by one voxel along each axis in turn: they disagree
  // along every boundary. Searching ±1 voxel reads each where it matches, which gives the
  // target's own labels back; without the search the boundaries stay blurred.
  at::manual_seed(12);
  const at::Tensor image = at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}), {24, 26, 28}, true)[0][0];
  const at::Tensor truth = (image > 0.4).to(at::kInt) + (image > 0.6).to(at::kInt);
  Atlases a;
  for (const auto& [dim, shift] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, -1}, {2, 1}, {0, -1}}) {
    a.images.push_back(at::roll(image, {shift}, {dim}) * 2.0 + 0.3);  // another gain and offset too
    a.labels.push_back(at::roll(truth, {shift}, {dim}));
  }
  const auto inner = [](const at::Tensor& x) { return x.slice(0, 3, 21).slice(1, 3, 23).slice(2, 3, 25); };
  const auto accuracy = [&](const Fused& f) {
    return inner(f.labels.eq(truth)).to(at::kFloat).mean().item<double>();
  };
  for (const Method m : {Method::Weighted, Method::Jlf}) {
    Options o = per_voxel();
    o.method = m;
    o.patch_radius = 1;
    const double before = accuracy(fuse(image, a, o));
    o.search_radius = 1;
    o.keep_weights = true;
    const Fused searched = fuse(image, a, o);
    EXPECT_GT(accuracy(searched), 0.995) << to_string(m);
    EXPECT_LT(before, accuracy(searched) - 0.02) << to_string(m);
    // Patch voting (each patch's weights for its atlas's labels over the whole patch,
    // read at its offset) keeps that.
    Options voting = o;
    voting.patch_vote = true;
    EXPECT_GT(accuracy(fuse(image, a, voting)), 0.995) << to_string(m);
    // Probabilities vote for the labels as read after the search.
    const at::Tensor p1 = probability(searched, a, 1);
    EXPECT_GT(inner(p1).masked_select(inner(truth).eq(1)).mean().item<double>(), 0.95) << to_string(m);
    ASSERT_EQ(searched.searched_labels.size(), a.labels.size());
  }
}

// The local search as it was before it ran in one pass per slab (a volume-sized
// temporary per offset and step): the oracle the fused search is pinned to.
detail::Searched search_by_tensors(const at::Tensor& target, const at::Tensor& atlas, const at::Tensor& labels, int s,
                                   int r) {
  const int64_t d = target.size(0), h = target.size(1), w = target.size(2);
  detail::Searched out;
  out.image = at::replication_pad3d(atlas.to(at::kFloat).unsqueeze(0).unsqueeze(0), {s, s, s, s, s, s})[0][0].contiguous();
  out.msd = at::full({d, h, w}, INFINITY, at::kFloat);
  out.chosen = at::zeros({d, h, w}, at::kShort);
  const auto offsets = detail::search_offsets(s);
  for (size_t k = 0; k < offsets.size(); ++k) {
    const auto& o = offsets[k];
    const at::Tensor shifted =
        out.image.slice(0, s + o[0], s + o[0] + d).slice(1, s + o[1], s + o[1] + h).slice(2, s + o[2], s + o[2] + w);
    const at::Tensor msd = detail::box_mean((target - shifted).square_(), r);
    const at::Tensor better = msd < out.msd;
    out.msd = at::where(better, msd, out.msd);
    out.chosen.masked_fill_(better, int64_t(k));
  }
  return out;
}

TEST(Fusion, TheSearchInOnePassPerSlabChoosesAsTheTensorSearchDid) {
  // Smooth volumes (as registered brains are), sizes that do not divide into slabs, thin
  // ones, search radii 1-3, patch radii 1-2. The fused search sums the boxes in float
  // (the old one in double): its means agree to float rounding (2e-7 of the largest
  // here; 1e-6 allowed), and a near tie could go the other way at a few voxels (none
  // here; 1 in 500 allowed). On OASIS-TRT 06 and 07 (5 atlases) the fused labels differ
  // at 3 and 1 of 10.5 M voxels, mean Dice unchanged (0.7201, 0.7331).
  at::manual_seed(21);
  for (const auto& size : std::vector<std::vector<int64_t>>{{19, 23, 17}, {3, 30, 12}, {33, 8, 9}}) {
    const at::Tensor target = at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}), size, true)[0][0] * 3 - 1;
    const at::Tensor atlas = at::roll(target, {1, -2}, {0, 2}) * 1.1 + 0.05 * at::rand(size);
    const at::Tensor labels = (atlas > 0.5).to(at::kInt);
    for (int s : {1, 2, 3}) {
      for (int r : {1, 2}) {
        SCOPED_TRACE(std::to_string(size[0]) + "x" + std::to_string(size[1]) + "x" + std::to_string(size[2]) +
                     " s=" + std::to_string(s) + " r=" + std::to_string(r));
        const detail::Searched fast = detail::search(target, atlas, labels, s, r);
        const detail::Searched slow = search_by_tensors(target, atlas, labels, s, r);
        const double differ = fast.chosen.ne(slow.chosen).to(at::kDouble).mean().item<double>();
        EXPECT_LE(differ, 2e-3);
        EXPECT_LT((fast.msd - slow.msd).abs().max().item<double>(), 1e-6 * slow.msd.abs().max().item<double>());
        EXPECT_TRUE(at::equal(fast.image, slow.image));
      }
    }
  }
  // Rows split into chunks (a wide volume: the ring of 2r+1 planes stays in a core's
  // cache for about 10 rows of 1200), and the box sums' general path (r = 4: 9 rows).
  for (const auto& [size, s, r] : std::vector<std::tuple<std::vector<int64_t>, int, int>>{
           {{4, 26, 1200}, 2, 2}, {{19, 23, 17}, 1, 4}}) {
    SCOPED_TRACE(std::to_string(size[2]) + " wide, r=" + std::to_string(r));
    const at::Tensor target = at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}), size, true)[0][0] * 3 - 1;
    const at::Tensor atlas = at::roll(target, {1, -2}, {0, 2}) * 1.1 + 0.05 * at::rand(size);
    const at::Tensor labels = (atlas > 0.5).to(at::kInt);
    const detail::Searched fast = detail::search(target, atlas, labels, s, r);
    const detail::Searched slow = search_by_tensors(target, atlas, labels, s, r);
    EXPECT_LE(fast.chosen.ne(slow.chosen).to(at::kDouble).mean().item<double>(), 2e-3);
    EXPECT_LT((fast.msd - slow.msd).abs().max().item<double>(), 1e-6 * slow.msd.abs().max().item<double>());
  }
}

TEST(Fusion, BoxMeansAreTheMeansOfWhatEachBoxHolds) {
  // The running sums against the definition: the mean over the box's voxels inside the
  // volume, volumes thinner than the box included.
  at::manual_seed(5);
  for (const auto& size : std::vector<std::vector<int64_t>>{{7, 9, 11}, {1, 5, 3}, {6, 2, 13}, {24, 26, 28}, {20, 45, 40}}) {
    const at::Tensor x = at::rand(size) * 10 - 5;
    const auto a = x.accessor<float, 3>();
    for (int r : {1, 2, 3}) {
      const at::Tensor got = detail::box_mean(x, r);
      const auto g = got.accessor<float, 3>();
      double worst = 0;
      for (int64_t i = 0; i < size[0]; ++i)
        for (int64_t j = 0; j < size[1]; ++j)
          for (int64_t k = 0; k < size[2]; ++k) {
            double sum = 0;
            int count = 0;
            for (int64_t u = std::max<int64_t>(0, i - r); u <= std::min<int64_t>(size[0] - 1, i + r); ++u)
              for (int64_t v = std::max<int64_t>(0, j - r); v <= std::min<int64_t>(size[1] - 1, j + r); ++v)
                for (int64_t w = std::max<int64_t>(0, k - r); w <= std::min<int64_t>(size[2] - 1, k + r); ++w) {
                  sum += a[u][v][w];
                  ++count;
                }
            worst = std::max(worst, std::abs(sum / count - g[i][j][k]));
          }
      EXPECT_LT(worst, 1e-4) << r;
    }
  }
}

TEST(Fusion, RefusesWhatItCannotFuse) {
  const at::Tensor t = at::rand({4, 4, 4});
  EXPECT_THROW(fuse(t, Atlases{}), std::invalid_argument);
  EXPECT_THROW(fuse(t, Atlases{{t}, {}}), std::invalid_argument);
  EXPECT_THROW(fuse(t, Atlases{{at::rand({4, 4, 5})}, {at::zeros({4, 4, 5}, at::kInt)}}), std::invalid_argument);
  EXPECT_THROW(fuse(t, Atlases{{t}, {at::zeros({4, 4, 4})}}), std::invalid_argument);  // float labels
  at::Tensor nan = t.clone();
  nan[1][1][1] = NAN;
  EXPECT_THROW(fuse(t, Atlases{{nan}, {at::zeros({4, 4, 4}, at::kInt)}}), std::invalid_argument);
  EXPECT_THROW(fuse(at::rand({4, 4}), Atlases{{t}, {at::zeros({4, 4, 4}, at::kInt)}}), std::invalid_argument);
  EXPECT_THROW(parse_method("staple"), std::invalid_argument);
  EXPECT_EQ(parse_method("jlf"), Method::Jlf);
}

}  // namespace
}  // namespace autoreg::segmentation
