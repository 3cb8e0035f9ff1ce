# Finds LibTorch (2.4 or newer) and defines the target carrying it: autoreg_torch in this
# build, the imported autoreg::torch in the installed package.
#
# Search order:
#   1. Torch_DIR or CMAKE_PREFIX_PATH, when the caller gives them (any LibTorch build,
#      for example torch 2.11 with CUDA 13.0 on a GPU machine);
#   2. AUTOREG_TORCH_PYTHON: a Python interpreter whose torch package is asked for
#      torch.utils.cmake_prefix_path;
#   3. the virtual environment scripts/setup.sh creates:
#      $AUTOREG_TORCH_VENV, else $AUTOREG_CACHE/torch-<version>, else
#      ~/.cache/autoreg/torch-<version> (version pinned in scripts/torch-version).
#   4. python3 on PATH, if its torch is importable.
# Used by this project's build and, installed beside AutoRegConfig.cmake, by projects
# that find_package(AutoReg): there AUTOREG_TORCH_PIN (the pinned version),
# AUTOREG_TORCH_BUILT_WITH (the Torch_DIR autoreg was built with, tried after step 1)
# and AUTOREG_TORCH_IMPORTED (make autoreg::torch an imported target) are set first.
if(NOT DEFINED AUTOREG_TORCH_PIN)
  file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../scripts/torch-version AUTOREG_TORCH_PIN LIMIT_COUNT 1)
endif()

function(_autoreg_torch_prefix_from python out)
  execute_process(
    COMMAND ${python} -c "import torch.utils; print(torch.utils.cmake_prefix_path, end='')"
    OUTPUT_VARIABLE _prefix RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND EXISTS "${_prefix}/Torch/TorchConfig.cmake")
    set(${out} "${_prefix}" PARENT_SCOPE)
  endif()
endfunction()

# Torch's CUDA setup overwrites CMAKE_CUDA_ARCHITECTURES (it uses TORCH_CUDA_ARCH_LIST);
# keep ours for our own kernels.
set(_autoreg_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
unset(CMAKE_CUDA_ARCHITECTURES)
# Without TORCH_CUDA_ARCH_LIST, Torch probes the installed GPUs with a test program,
# which fails on a machine without one: name ours (80;90 → 8.0;9.0) instead.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "")
  foreach(_a IN LISTS _autoreg_cuda_archs)
    string(REGEX REPLACE "^([0-9]+)([0-9])[a-z]*$" "\\1.\\2" _a "${_a}")
    list(APPEND TORCH_CUDA_ARCH_LIST "${_a}")
  endforeach()
  if(NOT TORCH_CUDA_ARCH_LIST)
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
  endif()
endif()

find_package(Torch QUIET)   # step 1
if(NOT Torch_FOUND AND AUTOREG_TORCH_BUILT_WITH AND EXISTS "${AUTOREG_TORCH_BUILT_WITH}")
  find_package(Torch QUIET PATHS "${AUTOREG_TORCH_BUILT_WITH}" NO_DEFAULT_PATH)
endif()
if(NOT Torch_FOUND)
  set(_candidates "")
  if(AUTOREG_TORCH_PYTHON)
    list(APPEND _candidates "${AUTOREG_TORCH_PYTHON}")
  endif()
  if(DEFINED ENV{AUTOREG_TORCH_VENV})
    list(APPEND _candidates "$ENV{AUTOREG_TORCH_VENV}/bin/python")
  endif()
  if(DEFINED ENV{AUTOREG_CACHE})
    set(_cache "$ENV{AUTOREG_CACHE}")
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(_cache "$ENV{XDG_CACHE_HOME}/autoreg")
  else()
    set(_cache "$ENV{HOME}/.cache/autoreg")
  endif()
  list(APPEND _candidates "${_cache}/torch-${AUTOREG_TORCH_PIN}/bin/python" python3)
  foreach(_py IN LISTS _candidates)
    if(NOT _prefix)
      _autoreg_torch_prefix_from("${_py}" _prefix)
      if(_prefix)
        message(STATUS "autoreg: LibTorch from ${_py}: ${_prefix}")
      endif()
    endif()
  endforeach()
  if(NOT _prefix)
    message(FATAL_ERROR "autoreg: LibTorch not found. Run scripts/setup.sh, or pass "
      "-DTorch_DIR=<libtorch>/share/cmake/Torch or -DAUTOREG_TORCH_PYTHON=<python with torch>.")
  endif()
  list(APPEND CMAKE_PREFIX_PATH "${_prefix}")
  find_package(Torch REQUIRED)
endif()

if(_autoreg_cuda_archs)
  set(CMAKE_CUDA_ARCHITECTURES "${_autoreg_cuda_archs}")
endif()

# TorchConfig sets no version variable on every release; read it from the headers
# (torch/headeronly/version.h since 2.9, torch/version.h before).
foreach(_h torch/headeronly/version.h torch/version.h)
  find_file(_autoreg_torch_version_h ${_h} PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(_autoreg_torch_version_h)
    file(STRINGS "${_autoreg_torch_version_h}" _v REGEX "#define TORCH_VERSION_(MAJOR|MINOR) ")
    if(_v)
      break()
    endif()
  endif()
  unset(_autoreg_torch_version_h CACHE)
endforeach()
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*" "\\1.\\2" AUTOREG_TORCH_VERSION "${_v}")
if(NOT AUTOREG_TORCH_VERSION MATCHES "^[0-9]+\\.[0-9]+$")
  message(WARNING "autoreg: could not read the LibTorch version from its headers")
elseif(AUTOREG_TORCH_VERSION VERSION_LESS 2.4)
  message(FATAL_ERROR "autoreg needs LibTorch 2.4 or newer; found ${AUTOREG_TORCH_VERSION}")
else()
  message(STATUS "autoreg: LibTorch ${AUTOREG_TORCH_VERSION}")
endif()

# One target carrying includes, libraries and TORCH_CXX_FLAGS (the C++ ABI macro).
# In this build it is autoreg_torch (no alias: the installed package's targets name
# autoreg::torch, which its config creates as an imported target from the LibTorch it finds).
if(NOT TARGET autoreg_torch AND NOT TARGET autoreg::torch)
  if(AUTOREG_TORCH_IMPORTED)
    add_library(autoreg::torch INTERFACE IMPORTED)
    set(_t autoreg::torch)
  else()
    add_library(autoreg_torch INTERFACE)
    set(_t autoreg_torch)
  endif()
  if(AUTOREG_TORCH_IMPORTED)
    target_link_libraries(${_t} INTERFACE ${TORCH_LIBRARIES})
  else()
    # This build's libraries and executables link LibTorch's CPU part only; its CUDA
    # backend comes with the CUDA plugin (ops/CMakeLists.txt: autoreg_cuda, linked to
    # autoreg_torch_cuda), loaded at run time when CUDA is asked for.
    target_link_libraries(${_t} INTERFACE torch_cpu c10)
    add_library(autoreg_torch_cuda INTERFACE)
    target_link_libraries(autoreg_torch_cuda INTERFACE ${_t} ${TORCH_LIBRARIES})
  endif()
  target_include_directories(${_t} SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  separate_arguments(_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(${_t} INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_flags}>)
  # The PyPI libtorch.so exports 64 std::filesystem symbols that crash when called
  # (seen with 2.11: std::filesystem::remove_all jumps to address 0). Linked after it,
  # libstdc++ loses those lookups to libtorch.so; linking libstdc++ first restores them.
  target_link_options(${_t} INTERFACE
    "LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
  # ATen's parallel_for is a header template whose OpenMP pragma is compiled into the
  # caller: without -fopenmp our kernels would silently run on one thread. The PyPI
  # build of LibTorch uses OpenMP (AT_PARALLEL_OPENMP in ATen/Config.h).
  find_file(_autoreg_aten_config ATen/Config.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  file(STRINGS "${_autoreg_aten_config}" _omp REGEX "define AT_PARALLEL_OPENMP 1")
  if(_omp)
    find_package(OpenMP REQUIRED COMPONENTS CXX)
    target_link_libraries(${_t} INTERFACE OpenMP::OpenMP_CXX)
  endif()
endif()
