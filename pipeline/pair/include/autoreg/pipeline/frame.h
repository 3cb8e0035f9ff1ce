// Moved to autoreg/pair/frame.h, the include prefix of its room (pipeline/pair/; issue 62).
// This forwarding header keeps programs that include the old name building for one
// release; it will then be removed.
#pragma once
#include "autoreg/pair/frame.h"
#include "autoreg/registration/field_box.h"

namespace autoreg::pipeline {
// The field helpers moved on to autoreg/registration/field_box.h (the algorithms' room);
// their old names here, for the same release.
using registration::Box;
using registration::crop;
using registration::expand_field;
using registration::foreground_box;
using registration::uncrop_replicate;
}  // namespace autoreg::pipeline
