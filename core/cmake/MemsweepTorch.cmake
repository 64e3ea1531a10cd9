# Finds the LibTorch memsweep builds against: the PyPI wheel torch==<tools/torch-version> (a CUDA
# 13.0 build that also runs on machines without a GPU), or a torch of that version you already
# have. Sets, for the rest of the build:
#   MEMSWEEP_TORCH            the torch package folder (include/, lib/, share/cmake/)
#   MEMSWEEP_TORCH_LIBRARIES  what to link
#   MEMSWEEP_CUDA             ON when the CUDA libraries are linked in (libtorch_cuda, libc10_cuda)
#   MEMSWEEP_CUDA_SOURCE      how CUDA was found ("toolkit <dir>", "wheel headers", or why not)
#   MEMSWEEP_CUDA_CRT_VERSION, MEMSWEEP_CUDA_CCCL_VERSION
#                             the nvidia-cuda-crt and -cccl whose crt/ and nv/ complete the wheel's
#
# MEMSWEEP_TORCH comes from -DMEMSWEEP_TORCH=..., else the environment variable of that name
# (tools/build passes what tools/setup-deps printed).
#
# With a CUDA toolkit (nvcc) present, the wheel's own CMake package (find_package(Torch)) is used:
# it needs nvcc at configure time. Without one — a fresh Debian machine, a GPU box with only a
# driver and pip's torch — the wheel's libraries are imported directly, and the CUDA headers come
# from the wheel's own nvidia-cuda-runtime dependency (nvidia/cu13/include), so the build still
# has CUDA: memsweep compiles no CUDA kernels, it only calls LibTorch's CUDA API from C++.
# The installed SDK's memsweepConfig.cmake includes this file too, with MEMSWEEP_TORCH and
# MEMSWEEP_TORCH_WANTED set to what memsweep was built against, so a plugin links the same torch.
if(NOT MEMSWEEP_TORCH_WANTED)
  file(READ ${PROJECT_SOURCE_DIR}/tools/torch-version MEMSWEEP_TORCH_WANTED)
  string(STRIP "${MEMSWEEP_TORCH_WANTED}" MEMSWEEP_TORCH_WANTED)
endif()

if(NOT MEMSWEEP_TORCH AND DEFINED ENV{MEMSWEEP_TORCH})
  set(MEMSWEEP_TORCH "$ENV{MEMSWEEP_TORCH}")
endif()
set(MEMSWEEP_TORCH "${MEMSWEEP_TORCH}" CACHE PATH
    "The torch package folder (.../site-packages/torch); tools/setup-deps prints it")
if(NOT MEMSWEEP_TORCH OR NOT EXISTS "${MEMSWEEP_TORCH}/share/cmake/Torch/TorchConfig.cmake")
  message(FATAL_ERROR "memsweep: no LibTorch at '${MEMSWEEP_TORCH}'. Configure with "
    "-DMEMSWEEP_TORCH=/path/to/site-packages/torch (torch ${MEMSWEEP_TORCH_WANTED}), or run "
    "tools/build, which installs it.")
endif()
file(STRINGS "${MEMSWEEP_TORCH}/version.py" _version_line REGEX "^__version__")
string(REGEX REPLACE "^__version__ *= *['\"]([^'\"]*)['\"].*" "\\1" MEMSWEEP_TORCH_FOUND_VERSION
       "${_version_line}")
if(NOT MEMSWEEP_TORCH_FOUND_VERSION MATCHES "^${MEMSWEEP_TORCH_WANTED}([+].*)?$")
  message(FATAL_ERROR "memsweep: the torch at ${MEMSWEEP_TORCH} is version "
    "'${MEMSWEEP_TORCH_FOUND_VERSION}'; memsweep needs ${MEMSWEEP_TORCH_WANTED} "
    "(pip install torch==${MEMSWEEP_TORCH_WANTED}).")
endif()

set(_torch_lib ${MEMSWEEP_TORCH}/lib)
set(_nvidia ${MEMSWEEP_TORCH}/../nvidia)
option(MEMSWEEP_IGNORE_CUDA_TOOLKIT
       "Build as on a machine without a CUDA toolkit (CUDA headers from the wheel)" OFF)
if(NOT MEMSWEEP_IGNORE_CUDA_TOOLKIT)
  find_program(MEMSWEEP_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin)
endif()

if(MEMSWEEP_NVCC AND NOT MEMSWEEP_IGNORE_CUDA_TOOLKIT AND EXISTS ${_torch_lib}/libtorch_cuda.so)
  get_filename_component(_cuda_root ${MEMSWEEP_NVCC} DIRECTORY)
  get_filename_component(_cuda_root ${_cuda_root} DIRECTORY)
  set(CMAKE_CUDA_COMPILER ${MEMSWEEP_NVCC})
  set(CUDAToolkit_ROOT ${_cuda_root})
  # memsweep compiles no kernels; the list only keeps Caffe2's arch detection quiet on machines
  # without a GPU.
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
  endif()
  list(APPEND CMAKE_PREFIX_PATH ${MEMSWEEP_TORCH}/share/cmake)
  find_package(Torch REQUIRED)
  # TorchConfig adds the toolkit's libnvrtc, which memsweep does not use.
  set(MEMSWEEP_TORCH_LIBRARIES ${TORCH_LIBRARIES})
  list(FILTER MEMSWEEP_TORCH_LIBRARIES EXCLUDE REGEX "libnvrtc")
  set(MEMSWEEP_CUDA ON)
  set(MEMSWEEP_CUDA_SOURCE "toolkit ${_cuda_root}")
else()
  # Import the wheel's libraries directly (find_package(Torch) of a CUDA wheel insists on nvcc).
  set(TORCH_INCLUDE_DIRS ${MEMSWEEP_TORCH}/include ${MEMSWEEP_TORCH}/include/torch/csrc/api/include)
  add_library(memsweep_torch INTERFACE IMPORTED GLOBAL)
  target_include_directories(memsweep_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(memsweep_torch INTERFACE ${_torch_lib}/libtorch_cpu.so ${_torch_lib}/libc10.so)
  # The wheel's nvidia-cuda-runtime has cuda_runtime.h but not the crt/ headers it includes: they
  # ship with nvcc, and on PyPI as nvidia-cuda-crt, which tools/setup-deps installs (the version in
  # tools/cuda-crt-version) into <cache>/cuda-crt-<version>/.
  # cuda_fp16.h (included by c10d's NCCL headers) includes <nv/target>, from CCCL
  # (nvidia-cuda-cccl, tools/cuda-cccl-version), installed into the same folder.
  foreach(_part CRT CCCL)
    string(TOLOWER ${_part} _file)
    if(NOT MEMSWEEP_CUDA_${_part}_VERSION)
      file(READ ${PROJECT_SOURCE_DIR}/tools/cuda-${_file}-version MEMSWEEP_CUDA_${_part}_VERSION)
      string(STRIP "${MEMSWEEP_CUDA_${_part}_VERSION}" MEMSWEEP_CUDA_${_part}_VERSION)
    endif()
  endforeach()
  set(_crt_version ${MEMSWEEP_CUDA_CRT_VERSION})
  set(_headers_folder cuda-headers-${MEMSWEEP_CUDA_CRT_VERSION}-${MEMSWEEP_CUDA_CCCL_VERSION})
  set(_crt_hints ${_nvidia}/cu13/include)
  foreach(_cache_root "$ENV{XDG_CACHE_HOME}" "$ENV{HOME}/.cache")
    if(_cache_root)
      list(APPEND _crt_hints ${_cache_root}/memsweep/${_headers_folder}/nvidia/cu13/include)
    endif()
  endforeach()
  find_path(MEMSWEEP_CUDA_CRT_INCLUDE NAMES crt/host_config.h HINTS ENV MEMSWEEP_CUDA_CRT_INCLUDE
            ${_crt_hints} NO_DEFAULT_PATH)
  if(MEMSWEEP_CUDA_CRT_INCLUDE AND NOT EXISTS ${MEMSWEEP_CUDA_CRT_INCLUDE}/nv/target)
    unset(MEMSWEEP_CUDA_CRT_INCLUDE CACHE)
    set(MEMSWEEP_CUDA_CRT_INCLUDE "")
  endif()
  if(NOT EXISTS ${_torch_lib}/libtorch_cuda.so
     OR NOT EXISTS ${_nvidia}/cu13/include/cuda_runtime_api.h)
    set(MEMSWEEP_CUDA OFF)
    set(MEMSWEEP_CUDA_SOURCE "none: this torch has no CUDA libraries")
  elseif(NOT MEMSWEEP_CUDA_CRT_INCLUDE)
    # The build goes on without CUDA rather than failing; --version says why.
    set(MEMSWEEP_CUDA OFF)
    string(CONCAT MEMSWEEP_CUDA_ABSENT "no CUDA toolkit, and the wheel's CUDA headers lack "
           "crt/ and nv/: tools/setup-deps installs nvidia-cuda-crt==${_crt_version} and "
           "nvidia-cuda-cccl==${MEMSWEEP_CUDA_CCCL_VERSION}")
    set(MEMSWEEP_CUDA_SOURCE "none: ${MEMSWEEP_CUDA_ABSENT}")
  else()
    target_include_directories(memsweep_torch SYSTEM INTERFACE ${_nvidia}/cu13/include
                               ${MEMSWEEP_CUDA_CRT_INCLUDE})
    # --no-as-needed: libtorch_cuda registers the CUDA kernels when it loads; nothing in memsweep
    # may reference it directly.
    target_link_libraries(memsweep_torch INTERFACE ${_torch_lib}/libc10_cuda.so
      "-Wl,--no-as-needed,${_torch_lib}/libtorch_cuda.so -Wl,--as-needed"
      ${_nvidia}/cu13/lib/libcudart.so.13)
    set(MEMSWEEP_CUDA ON)
    set(MEMSWEEP_CUDA_SOURCE "wheel headers (no CUDA toolkit found; crt/ from ${MEMSWEEP_CUDA_CRT_INCLUDE})")
  endif()
  set(MEMSWEEP_TORCH_LIBRARIES memsweep_torch)
  set(TORCH_CXX_FLAGS "")
  set(Torch_VERSION ${MEMSWEEP_TORCH_WANTED})
endif()
# The wheel's libraries are built against an older libstdc++ with the newer parts linked in
# statically, and they export those copies (std::filesystem, std::chrono::tzdb, ...) without
# symbol versions. A program whose NEEDED list names libtorch before libstdc++ binds its own
# std::filesystem calls to libtorch's copies, which crash (remove_all jumps to address 0). Naming
# libstdc++ first keeps the system's libstdc++ ahead of them in the lookup order.
list(PREPEND MEMSWEEP_TORCH_LIBRARIES "-Wl,--push-state,--no-as-needed,-lstdc++,--pop-state")

# OpenMP: memsweep's kernels call at::parallel_for inline, so they must run in the same OpenMP
# runtime as ATen. The wheel carries its own libgomp.so.1 (same soname as the system's); code is
# compiled with -fopenmp and linked against that one, so exactly one runtime is ever loaded
# (tests/core/env/libtorch_platform_test.cc checks it). Clang's -fopenmp emits calls into LLVM's
# runtime (__kmpc_*), which libgomp lacks: a clang build (the `fuzz` preset) compiles without it,
# and at::parallel_for inlined into memsweep's code then runs on one thread.
if(NOT TARGET memsweep::openmp)
  add_library(memsweep::openmp INTERFACE IMPORTED GLOBAL)
  set_target_properties(memsweep::openmp PROPERTIES
    INTERFACE_COMPILE_OPTIONS $<$<CXX_COMPILER_ID:GNU>:-fopenmp>
    INTERFACE_LINK_LIBRARIES "${_torch_lib}/libgomp.so.1;Threads::Threads")
endif()
find_package(Threads REQUIRED)

message(STATUS "memsweep: LibTorch ${MEMSWEEP_TORCH_FOUND_VERSION} at ${MEMSWEEP_TORCH}; "
               "CUDA: ${MEMSWEEP_CUDA} (${MEMSWEEP_CUDA_SOURCE})")
if(MEMSWEEP_SDK_CONSUMER)  # a third-party plugin's build: the rest is memsweep's own
  return()
endif()

# gloo's headers, for c10d's ProcessGroupGloo.hpp (the wheel links gloo statically inside
# libtorch_cpu.so but does not ship its headers). Headers only: no libgloo is ever linked.
find_path(MEMSWEEP_GLOO_INCLUDE gloo/config.h
  HINTS ENV MEMSWEEP_GLOO_INCLUDE "$ENV{XDG_CACHE_HOME}/memsweep/gloo-headers/include"
        "$ENV{HOME}/.cache/memsweep/gloo-headers/include")
if(NOT MEMSWEEP_GLOO_INCLUDE)
  message(FATAL_ERROR "memsweep: gloo's headers not found (gloo/config.h). tools/setup-deps "
    "unpacks them from Debian's libgloo-dev; or pass -DMEMSWEEP_GLOO_INCLUDE=<dir>.")
endif()

# NCCL's header, for c10d's ProcessGroupNCCL.hpp (multi-rank runs on CUDA): pip's torch depends
# on nvidia-nccl, which sits beside it in site-packages. Without it memsweep builds without NCCL
# and refuses multi-rank CUDA runs (core/comm/nccl_communicator.h).
set(MEMSWEEP_NCCL OFF)
if(MEMSWEEP_CUDA)
  find_path(MEMSWEEP_NCCL_INCLUDE nccl.h
    HINTS ${MEMSWEEP_TORCH}/../nvidia/nccl/include ENV MEMSWEEP_NCCL_INCLUDE NO_DEFAULT_PATH)
  if(MEMSWEEP_NCCL_INCLUDE)
    set(MEMSWEEP_NCCL ON)
  endif()
endif()
message(STATUS "memsweep: NCCL for multi-rank CUDA runs: ${MEMSWEEP_NCCL}")

# fmt: the wheel ships fmt 12 headers in torch/include, which would shadow Debian's fmt 9 that
# libspdlog is built against. A folder holding only Debian's fmt goes first on the include path.
find_package(fmt REQUIRED)
get_target_property(_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
if(NOT _fmt_include)
  set(_fmt_include /usr/include)
endif()
set(MEMSWEEP_FMT_SHIM ${PROJECT_BINARY_DIR}/fmt-include)
file(MAKE_DIRECTORY ${MEMSWEEP_FMT_SHIM})
file(CREATE_LINK ${_fmt_include}/fmt ${MEMSWEEP_FMT_SHIM}/fmt SYMBOLIC)
