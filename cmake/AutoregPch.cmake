# Precompiled LibTorch headers. ATen's headers are most of the compile time of any unit
# that includes them (registration/losses/src/metrics.cpp: 8.8 s, 2.6 s with them precompiled),
# and nearly every unit does. GCC reads a precompiled header only where it was compiled
# with the same code-generation options, so two are built: one for libraries (-fPIC),
# one for executables (-fPIE); every target of a kind reuses its kind's (one is ~370 MB).
# Units built with options of their own (the CPU kernels' -march=native) skip it.
#   autoreg_precompile(<target>)   after the target is defined
option(AUTOREG_PCH "Precompile LibTorch's headers once for every target (GCC)" ON)
if(AUTOREG_PCH AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(AUTOREG_PCH OFF)  # clang (the fuzz build) compiles without
endif()

if(AUTOREG_PCH)
  # ccache caches the precompiled headers, and the units that read them, only when told
  # that __DATE__/__TIME__ and the headers' macros are safe to ignore (they are here);
  # set before the targets, which take it when they are made.
  if(AUTOREG_CCACHE)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${AUTOREG_CCACHE})
  endif()
  foreach(_kind lib exe)
    add_library(autoreg_pch_${_kind} OBJECT ${CMAKE_CURRENT_LIST_DIR}/autoreg_pch.cpp)
    target_link_libraries(autoreg_pch_${_kind} PRIVATE autoreg_torch)
    target_precompile_headers(autoreg_pch_${_kind} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:${CMAKE_CURRENT_LIST_DIR}/autoreg_pch.h>")
  endforeach()
  set_target_properties(autoreg_pch_exe PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(autoreg_pch_exe PRIVATE -fPIE)
endif()

function(autoreg_precompile target)
  if(NOT AUTOREG_PCH)
    return()
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    target_precompile_headers(${target} REUSE_FROM autoreg_pch_exe)
  else()
    target_precompile_headers(${target} REUSE_FROM autoreg_pch_lib)
  endif()
endfunction()

# Whether `target` links LibTorch, itself or through one of our targets (`out`: ON/OFF).
function(_autoreg_uses_torch target out)
  set(_uses OFF)
  get_target_property(_libs ${target} LINK_LIBRARIES)
  get_target_property(_ilibs ${target} INTERFACE_LINK_LIBRARIES)
  foreach(_l IN LISTS _libs _ilibs)
    if(_l MATCHES "autoreg_torch|autoreg::torch")
      set(_uses ON)
      break()
    endif()
    string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" _l "${_l}")
    if(_l MATCHES "^autoreg" AND TARGET "${_l}")
      get_target_property(_aliased ${_l} ALIASED_TARGET)
      if(_aliased)
        set(_l ${_aliased})
      endif()
      _autoreg_uses_torch(${_l} _sub)
      if(_sub)
        set(_uses ON)
        break()
      endif()
    endif()
  endforeach()
  set(${out} ${_uses} PARENT_SCOPE)
endfunction()

# autoreg_precompile() for every C++ target of ours that links LibTorch under `dir` (after they are all
# defined: the top-level CMakeLists.txt calls it last).
function(autoreg_precompile_all dir)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_type ${_t} TYPE)
    if(_t MATCHES "^autoreg" AND NOT _t MATCHES "^autoreg_pch_|_cuda_kernels$" AND
       _type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      _autoreg_uses_torch(${_t} _uses)
      if(_uses)
        autoreg_precompile(${_t})
      endif()
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_d IN LISTS _subdirs)
    autoreg_precompile_all(${_d})
  endforeach()
endfunction()
