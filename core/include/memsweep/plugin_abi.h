/* memsweep plugin ABI: the one C entry point every strategy plugin exports.
 *
 * A plugin is a shared library exporting `memsweep_plugin_info`, which returns a pointer to a
 * static MemsweepPluginInfo. The host checks abi_version, struct_size and the build fingerprint
 * before it calls anything else, validates the experiment's parameters against `params`, and
 * only then calls `register_fn` to obtain the C++ strategy factory (see plugin.h, which writes
 * all of this for you with MEMSWEEP_PLUGIN).
 *
 * The struct is append-only: new members go at the end, marked with the ABI version that added
 * them, and struct_size tells the host how much of it a plugin knows.
 */
#ifndef MEMSWEEP_PLUGIN_ABI_H_
#define MEMSWEEP_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: the C++ slot interfaces behind register_fn changed (PrecisionStrategy::
 *    HandOverOptimizerParameters, ShardingStrategy::AdoptOptimizerParameters, which the host
 *    calls): a plugin built against version 1's headers has shorter vtables and is refused. */
/* 3: CUDA devices: Strategy::DeviceRefusal, AllocatorStrategy::DeviceAllocatorSettings (new
 *    virtual functions) and RunContext's device, device_memory, skip_optimizer_step and
 *    record_step members. */
#define MEMSWEEP_PLUGIN_ABI_VERSION 3u
#define MEMSWEEP_PLUGIN_ENTRY_SYMBOL "memsweep_plugin_info"

typedef enum MemsweepParamType {
  MEMSWEEP_PARAM_INT = 0,
  MEMSWEEP_PARAM_FLOAT = 1,
  MEMSWEEP_PARAM_BOOL = 2,
  MEMSWEEP_PARAM_STRING = 3,
  MEMSWEEP_PARAM_BYTES = 4 /* a size: "64MiB", "2GiB" or an integer byte count */
} MemsweepParamType;

typedef struct MemsweepParamSpec {
  const char* name;
  MemsweepParamType type;
  const char* default_value; /* TOML literal (e.g. "4", "1e-3", "\"longest\"", "true"); NULL if required */
  const char* doc;
  int required; /* non-zero: the experiment must set it */
} MemsweepParamSpec;

/* What the plugin was compiled against; must equal the host's exactly (C++ ABI). */
typedef struct MemsweepBuildFingerprint {
  const char* torch_version; /* TORCH_VERSION, e.g. "2.11.0" */
  const char* compiler;      /* e.g. "gcc 12.2" */
  int cxx11_abi;             /* _GLIBCXX_USE_CXX11_ABI */
} MemsweepBuildFingerprint;

/* Opaque: a memsweep::PluginRegistrar* behind a C type. */
typedef struct MemsweepRegistrar MemsweepRegistrar;

/* Returns 0 on success; otherwise writes a NUL-terminated message into error. */
typedef int (*MemsweepRegisterFn)(MemsweepRegistrar* registrar, char* error, size_t error_size);

typedef struct MemsweepPluginInfo {
  /* ABI 1 */
  uint32_t abi_version;
  uint32_t struct_size;
  const char* name;
  const char* slot; /* allocator, batching, precision, attention, checkpointing, sharding,
                       packing, callbacks */
  const char* version;
  const char* description;
  MemsweepBuildFingerprint fingerprint;
  const MemsweepParamSpec* params;
  uint32_t num_params;
  MemsweepRegisterFn register_fn;
  int slot_default; /* non-zero: used for its slot when an experiment does not choose one */
} MemsweepPluginInfo;

typedef const MemsweepPluginInfo* (*MemsweepPluginEntryFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMSWEEP_PLUGIN_ABI_H_ */
