# Included by plugins/CMakeLists.txt before optimizer-adamw_8bit is defined (in its scope).
# paged_state.cc calls the CUDA runtime (cudaMallocManaged) in a build with CUDA, guarded by
# MEMSWEEP_CUDA_BUILD as core's CUDA sources are (core/CMakeLists.txt); a build without CUDA
# compiles it without those calls. (A source with definitions of its own stays out of the unity
# batch.)
if(MEMSWEEP_CUDA)
  set_source_files_properties(${dir}/paged_state.cc PROPERTIES
    COMPILE_DEFINITIONS MEMSWEEP_CUDA_BUILD=1)
endif()
