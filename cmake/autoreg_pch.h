// The headers every target precompiles (cmake/AutoregPch.cmake): LibTorch's tensor
// library, which is most of any of our translation units' compile time, and the standard
// headers around it. Nothing of ours: a change to our headers never rebuilds the
// precompiled one.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
