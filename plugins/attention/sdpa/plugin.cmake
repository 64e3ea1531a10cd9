# attention/sdpa needs at::scaled_dot_product_attention, which LibTorch has from 2.0 on.
# Included by plugins/CMakeLists.txt before the plugin is added; MEMSWEEP_PLUGIN_SKIP skips it.
if(Torch_VERSION VERSION_LESS 2.0)
  message(STATUS "attention/sdpa skipped: LibTorch ${Torch_VERSION} has no "
                 "scaled_dot_product_attention (needs 2.0 or newer)")
  set(MEMSWEEP_PLUGIN_SKIP ON)
endif()
