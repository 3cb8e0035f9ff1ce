# What the build takes from Debian's packages (nlohmann-json, gloo's headers, GoogleTest),
# taken instead from a folder where a machine has none of them: a GPU machine with CUDA
# and LibTorch but no package registry (scripts/device-check.sh, which carries the
# folder scripts/device-prepare.sh fills). AUTOREG_THIRD_PARTY holds
#   include/nlohmann/json.hpp, include/gloo/...   headers
#   googletest/                                  GoogleTest's sources (Debian's /usr/src/googletest)
# When it is given, its copies are used and the system's are not looked for, so that a
# rehearsal here (scripts/device-check.sh --rehearse) builds exactly as the GPU machine does.
set(AUTOREG_THIRD_PARTY "" CACHE PATH
  "headers and sources of the Debian packages for a machine without them (scripts/device-prepare.sh)")
if(NOT AUTOREG_THIRD_PARTY)
  return()
endif()
if(NOT EXISTS "${AUTOREG_THIRD_PARTY}/include")
  message(FATAL_ERROR "AUTOREG_THIRD_PARTY=${AUTOREG_THIRD_PARTY}: no include/ folder (scripts/device-prepare.sh)")
endif()

if(NOT TARGET nlohmann_json::nlohmann_json)
  # Imported, as find_package's would be (the install's export may name it).
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED GLOBAL)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${AUTOREG_THIRD_PARTY}/include")
endif()

# parallel/CMakeLists.txt takes gloo's headers from here.
set(AUTOREG_GLOO_INCLUDE_DIR "${AUTOREG_THIRD_PARTY}/include" CACHE PATH "" FORCE)

if(AUTOREG_BUILD_TESTS)
  if(NOT EXISTS "${AUTOREG_THIRD_PARTY}/googletest/CMakeLists.txt")
    message(FATAL_ERROR "AUTOREG_THIRD_PARTY=${AUTOREG_THIRD_PARTY}: no googletest/ sources (or -DAUTOREG_BUILD_TESTS=OFF)")
  endif()
  if(NOT TARGET GTest::gtest)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory("${AUTOREG_THIRD_PARTY}/googletest" "${CMAKE_BINARY_DIR}/third_party/googletest" EXCLUDE_FROM_ALL)
    if(NOT TARGET GTest::gtest)
      add_library(GTest::gtest ALIAS gtest)
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
  endif()
endif()
