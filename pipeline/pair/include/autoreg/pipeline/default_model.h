// Moved to autoreg/pair/default_model.h, the include prefix of its room (pipeline/pair/; issue 62).
// This forwarding header keeps programs that include the old name building for one
// release; it will then be removed.
#pragma once
#include "autoreg/pair/default_model.h"
