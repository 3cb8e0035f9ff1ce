// `autoreg <subcommand> [options]`: dispatches to one thin file per subcommand and maps
// errors to exit codes (apps/exit_codes.h). Each subcommand has --help.
#include <tclap/CmdLine.h>

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <streambuf>
#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/registration/archive.h"
#include "exit_codes.h"

namespace autoreg::apps {
int run_adapt(int argc, char** argv);
int run_apply(int argc, char** argv);
int run_evaluate(int argc, char** argv);
int run_register(int argc, char** argv);
int run_train(int argc, char** argv);
int run_search(int argc, char** argv);
int run_segment(int argc, char** argv);
int run_validate(int argc, char** argv);
int run_pack(int argc, char** argv);
int run_template(int argc, char** argv);
}  // namespace autoreg::apps

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
  // Back large tensors with transparent huge pages (see main()).
  bool huge_pages = false;
};

const Subcommand kSubcommands[] = {
    {"register", autoreg::apps::run_register,
     "register a moving volume to a fixed one: warped image and displacement field"},
    {"apply", autoreg::apps::run_apply,
     "apply a displacement field (autoreg's or ANTs') to an image or label map"},
    {"evaluate", autoreg::apps::run_evaluate,
     "Dice, HD95 and folding of a registration result"},
    {"train", autoreg::apps::run_train,
     "train a registration network on a dataset manifest and write a model file", true},
    {"search", autoreg::apps::run_search,
     "search the network architecture and training objective for a dataset, then retrain it", true},
    {"adapt", autoreg::apps::run_adapt,
     "adapt a trained model to a new scanner or contrast from a few unlabelled scans of it", true},
    {"segment", autoreg::apps::run_segment,
     "segment a target by registering labelled atlases onto it and fusing their labels"},
    {"validate", autoreg::apps::run_validate,
     "evaluate a training run's checkpoints as they are written (train starts it), keeping the best"},
    {"template", autoreg::apps::run_template,
     "build an unbiased template of a cohort (group-wise registration) with every subject's fields"},
    {"pack", autoreg::apps::run_pack,
     "preprocess a dataset manifest into one training set file (training where ITK is not installed)"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: autoreg <subcommand> [options]   (autoreg <subcommand> --help)\n\n");
  for (const auto& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autoreg::apps;
  // Keep freed memory in the process (large tensors would otherwise be mapped and
  // unmapped on every operation).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // ITK's file readers (MetaIO, GDCM, NIfTI) write their own diagnostics to std::cerr,
  // several lines per bad file, beside the one-line message this command prints; they go
  // nowhere unless AUTOREG_VERBOSE is set. autoreg's own messages use stdio.
  struct Discard : std::streambuf {
    int overflow(int c) override { return traits_type::not_eof(c); }
  };
  // Never destroyed: std::cerr is flushed by the last static destructor to run, which may
  // come after any static of ours (AddressSanitizer caught the flush into a destroyed
  // buffer at exit).
  static Discard* const itk_chatter = new Discard;
  const char* verbose = std::getenv("AUTOREG_VERBOSE");
  if (!verbose || !*verbose || std::strcmp(verbose, "0") == 0) std::cerr.rdbuf(itk_chatter);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kUsage : kOk;
  }
  for (const auto& s : kSubcommands) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    // Transparent huge pages for tensors (torch's THP_MEM_ALLOC_ENABLE; the user's
    // setting wins): long training and search runs reuse their memory, where huge pages
    // save TLB misses (a copy into memory without them runs at a third of the speed,
    // bench/bench_warp.cpp); a one-shot command touches almost all its memory for the
    // first time, and on a VM a first touch of a huge page cost 14 s/GB against 1 s/GB
    // for small pages (measured: register --model default 16-19 s with them, 13-15 s
    // without; instance optimisation 48 s against 37 s).
    setenv("THP_MEM_ALLOC_ENABLE", s.huge_pages ? "1" : "0", /*overwrite=*/0);
    // CUDA is loaded only when asked for, and before LibTorch is first asked about it
    // (ops.h: cuda_available).
    for (int i = 2; i < argc; ++i) {
      const bool cuda = (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], "cuda") == 0) ||
                        std::strcmp(argv[i], "--device=cuda") == 0;
      if (cuda) autoreg::ops::cuda_available();
    }
    try {
      return s.run(argc - 1, argv + 1);
    } catch (const TCLAP::ExitException& e) {  // --help, --version
      return e.getExitStatus() == 0 ? kOk : kUsage;
    } catch (const TCLAP::ArgException& e) {
      std::fprintf(stderr, "autoreg %s: %s (%s)\n", s.name, e.error().c_str(), e.argId().c_str());
      return kUsage;
    } catch (const std::exception& e) {
      // The first line of a torch error is the message; the rest is its stack.
      std::string what = e.what();
      what = what.substr(0, what.find('\n'));
      std::fprintf(stderr, "autoreg %s: %s\n", s.name, what.c_str());
      const int code = autoreg::apps::exit_code(e);
      // A rank under a supervisor tells it what ended it (parallel/worker.h).
      autoreg::parallel::report_failure(e, code);
      return code;
    }
  }
  std::fprintf(stderr, "autoreg: unknown subcommand '%s'\n", argv[1]);
  usage(stderr);
  return kUsage;
}
