# memsweep_skip_pch_where_unused(<target>)
#
# The precompiled header (core/pch.h: ATen, torch::nn::Module, autograd) is ~550 MiB with
# LibTorch 2.11; loading it costs a translation unit about 2-3 s even when the file never touches
# LibTorch. This marks every source of <target> that includes no LibTorch header — directly or
# through memsweep's own headers, followed transitively — with SKIP_PRECOMPILE_HEADERS, so only
# the files that need the heavy headers pay for them.
function(_memsweep_uses_torch file out)
  get_property(known GLOBAL PROPERTY "MEMSWEEP_USES_TORCH_${file}" SET)
  if(known)
    get_property(result GLOBAL PROPERTY "MEMSWEEP_USES_TORCH_${file}")
    set(${out} ${result} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "MEMSWEEP_USES_TORCH_${file}" OFF)  # cycles end here
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  set(result OFF)
  get_filename_component(dir ${file} DIRECTORY)
  foreach(line IN LISTS includes)
    if(line MATCHES "[<\"](ATen|torch|c10)/")
      set(result ON)
      break()
    endif()
    if(line MATCHES "\"([^\"]+)\"")
      set(inc ${CMAKE_MATCH_1})
      foreach(base ${dir} ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/core/include
                   ${PROJECT_SOURCE_DIR}/plugins ${PROJECT_SOURCE_DIR}/tests)
        if(EXISTS ${base}/${inc} AND NOT IS_DIRECTORY ${base}/${inc})
          get_filename_component(path ${base}/${inc} ABSOLUTE)
          _memsweep_uses_torch(${path} nested)
          if(nested)
            set(result ON)
          endif()
          break()
        endif()
      endforeach()
      if(result)
        break()
      endif()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "MEMSWEEP_USES_TORCH_${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(memsweep_skip_pch_where_unused target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cc$")
      continue()
    endif()
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    _memsweep_uses_torch(${path} uses)
    if(NOT uses)
      set_source_files_properties(${path} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# memsweep_reuse_pch_hidden(<target>)
#
# For a target compiled with hidden visibility (the plugins and their code): reuses the
# precompiled header like the rest of the tree. GCC takes a header built with default
# visibility; clang (the `fuzz` preset) refuses one whose visibility differs, so there the target
# compiles without it.
function(memsweep_reuse_pch_hidden target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM memsweep_pch)
  memsweep_skip_pch_where_unused(${target})
endfunction()
