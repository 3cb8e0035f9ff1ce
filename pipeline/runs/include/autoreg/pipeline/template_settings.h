// Moved to autoreg/runs/template_settings.h, the include prefix of its room (pipeline/runs/; issue 62).
// This forwarding header keeps programs that include the old name building for one
// release; it will then be removed.
#pragma once
#include "autoreg/runs/template_settings.h"
