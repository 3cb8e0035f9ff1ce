# `cmake --install` of a relocatable CMake package:
#   find_package(AutoReg CONFIG REQUIRED)
# gives autoreg::base, autoreg::ops, autoreg::registration (autoreg::losses, ::classical, ::networks and
# ::training together), autoreg::search, autoreg::segmentation, autoreg::parallel and, in a build
# with ITK, autoreg::io, autoreg::rt (RT Structure Sets), autoreg::pipeline (the jobs' library API: autoreg::pair, one pair's registration and the
# ITK filter, and autoreg::runs, the long runs) and autoreg::qc (quality-control pictures), with their
# usage requirements: AutoRegConfig.cmake finds
# LibTorch (as this build did, or where this build found it) and ITK (the same
# components). Also installs the `autoreg` command and the default model.
include(CMakePackageConfigHelpers)

set(_targets autoreg_base autoreg_ops autoreg_losses autoreg_classical autoreg_networks autoreg_training
  autoreg_registration autoreg_search autoreg_segmentation autoreg_parallel)
if(AUTOREG_WITH_ITK)
  list(APPEND _targets autoreg_io autoreg_rt autoreg_pair autoreg_runs autoreg_pipeline autoreg_qc)
  # The command: bin/ → lib/, relative.
  file(RELATIVE_PATH _bin_to_lib "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(autoreg PROPERTIES INSTALL_RPATH "$ORIGIN/${_bin_to_lib}")
  install(TARGETS autoreg RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET autoreg_cuda)
  # The CUDA plugin, beside libautoreg_ops where ops::cuda_available() looks for it.
  install(TARGETS autoreg_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(AUTOREG_SANITIZE)
  # Libraries built with sanitizers need their runtime in every program that links them.
  set_property(TARGET ${_targets} APPEND PROPERTY INTERFACE_LINK_OPTIONS -fsanitize=${AUTOREG_SANITIZE})
endif()
install(TARGETS ${_targets} EXPORT AutoRegTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(_include_dirs base/include/ ops/include/ registration/losses/include/ registration/classical/include/
  registration/networks/include/ registration/training/include/ search/include/ segmentation/include/ parallel/include/)
if(AUTOREG_WITH_ITK)
  list(APPEND _include_dirs io/include/ rt/include/ pipeline/pair/include/ pipeline/runs/include/ qc/include/)
  install(FILES models/default.autoreg DESTINATION ${CMAKE_INSTALL_DATADIR}/autoreg)
endif()
foreach(_dir IN LISTS _include_dirs)
  install(DIRECTORY ${_dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/AutoReg)
install(EXPORT AutoRegTargets NAMESPACE autoreg:: DESTINATION ${_cmake_dir})
configure_package_config_file(cmake/AutoRegConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/AutoRegConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/AutoRegConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/AutoRegConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/AutoRegConfigVersion.cmake cmake/AutoregTorch.cmake
  DESTINATION ${_cmake_dir})
