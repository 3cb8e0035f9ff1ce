# A room of a folder that holds several (registration/, pipeline/): a shared library
# autoreg_<name> (alias autoreg::<name>, exported as <name>) from <folder>/<name>/src,
# with its headers in <folder>/<name>/include (installed into the common include folder).
#   autoreg_room(<name> SOURCES ... [PUBLIC <targets>...] [PRIVATE <targets>...])
function(autoreg_room name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  add_library(autoreg_${name} SHARED ${ARG_SOURCES})
  add_library(autoreg::${name} ALIAS autoreg_${name})
  set_target_properties(autoreg_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(autoreg_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/${name}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(autoreg_${name} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
endfunction()
