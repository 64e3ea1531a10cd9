# memsweep_add_plugin(NAME SOURCES src.cc... [OUTPUT_DIRECTORY dir])
#
# Builds a memsweep strategy plugin: a shared module linked against memsweep's SDK, compiled with
# hidden visibility and linked with a version script that exports only memsweep_plugin_info.
# Works in memsweep's own tree and, through memsweepConfig.cmake, for third-party plugins.
set(_MEMSWEEP_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(memsweep_add_plugin NAME)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "memsweep_add_plugin(${NAME}): SOURCES is required")
  endif()
  add_library(${NAME} MODULE ${ARG_SOURCES})
  if(TARGET memsweep_core)
    target_link_libraries(${NAME} PRIVATE memsweep_core)
    if(NOT ARG_OUTPUT_DIRECTORY)
      set(ARG_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib/memsweep/plugins)
    endif()
  else()
    target_link_libraries(${NAME} PRIVATE memsweep::core)
  endif()
  set_target_properties(${NAME} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${NAME} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(TARGET memsweep_pch)  # memsweep's own tree only: its precompiled header
    memsweep_reuse_pch_hidden(${NAME})
  endif()
  target_link_options(${NAME} PRIVATE
    -Wl,--version-script=${_MEMSWEEP_PLUGIN_CMAKE_DIR}/memsweep_plugin.map -Wl,--exclude-libs,ALL)
  # Every symbol resolved at link time — except in a clang sanitizer build (the `fuzz` preset),
  # where the sanitizer runtime lives in the executable and plugins find it when loaded.
  if(NOT (MEMSWEEP_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"))
    target_link_options(${NAME} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()
