// The old include names of pipeline/'s two rooms (autoreg/pipeline/<name>.h, before
// their prefixes named the rooms: autoreg/pair/, autoreg/runs/) still build a program,
// for one release: each forwards to its header's new name. Nothing else in this tree
// includes them; this file is their compile check.
#include <gtest/gtest.h>

#include "autoreg/pipeline/apply_job.h"
#include "autoreg/pipeline/contours_job.h"
#include "autoreg/pipeline/default_model.h"
#include "autoreg/pipeline/evaluate_job.h"
#include "autoreg/pipeline/frame.h"
#include "autoreg/pipeline/library_folder.h"
#include "autoreg/pipeline/option_values.h"
#include "autoreg/pipeline/output_files.h"
#include "autoreg/pipeline/pair_checks.h"
#include "autoreg/pipeline/preset_choice.h"
#include "autoreg/pipeline/qc_picture.h"
#include "autoreg/pipeline/register_images.h"
#include "autoreg/pipeline/register_job.h"
#include "autoreg/pipeline/register_pair.h"
#include "autoreg/pipeline/registration_settings.h"
#include "autoreg/pipeline/adapt_job.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/pipeline/executable.h"
#include "autoreg/pipeline/exit_codes.h"
#include "autoreg/pipeline/pack_job.h"
#include "autoreg/pipeline/register_pairs.h"
#include "autoreg/pipeline/run_log.h"
#include "autoreg/pipeline/run_loop.h"
#include "autoreg/pipeline/run_settings.h"
#include "autoreg/pipeline/search_job.h"
#include "autoreg/pipeline/search_settings.h"
#include "autoreg/pipeline/segment.h"
#include "autoreg/pipeline/segment_job.h"
#include "autoreg/pipeline/template_job.h"
#include "autoreg/pipeline/template_settings.h"
#include "autoreg/pipeline/train_job.h"
#include "autoreg/pipeline/validate_job.h"

namespace autoreg::test {
namespace {

TEST(ForwardingHeaders, TheOldIncludeNamesReachTheSameDeclarations) {
  // A type and a function of each room, through the old names.
  const pipeline::RegistrationSettings settings;
  EXPECT_EQ(pipeline::setting_row("preset").get(settings), settings.preset);
  EXPECT_FALSE(pipeline::search_schema().empty());
}

}  // namespace
}  // namespace autoreg::test
