/* memsweep plugin ABI: the one C entry point every strategy plugin exports.
 *
 * A plugin is a shared library exporting `memsweep_plugin_info`, which returns a pointer to a
 * static MemsweepPluginInfo. The host checks abi_version, struct_size and the build fingerprint
 * before it calls anything else, validates the experiment's parameters against `params`, and
 * only then calls `register_fn` to obtain the C++ strategy factory (see plugin.h, which writes
 * all of this for you with MEMSWEEP_PLUGIN).
 *
 * The ABI is exact-match: the host loads a plugin only if it was built against the very SDK the
 * host was built with — the same ABI version, memsweep version and SDK headers (a hash of their
 * text), the same LibTorch, compiler and C++ library ABI (MemsweepBuildFingerprint). Nothing in
 * the SDK is append-only; any change to an SDK header changes the hash, and plugins are rebuilt.
 * abi_version and struct_size stay the first two members in every version, so the host reads them
 * from any plugin, old or new, and refuses a mismatch before it reads anything else.
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
/* 4: exact-match ABI: the fingerprint adds the memsweep version and the SDK header hash; the
 *    C++ types behind register_fn are only those of the SDK headers (RunContext without core
 *    types; model::Model and model::Block instead of the model's classes). */
/* 5: the adapter slot (Slot::kAdapter, AdapterStrategy; model::Model's Linears, Embedding and
 *    Shape), RunContext::seed, ShardingStrategy::SupportsFrozenParameters and the parameter type
 *    MEMSWEEP_PARAM_STRINGS. */
/* 6: the loss slot (Slot::kLoss, LossStrategy, memsweep/loss.h): Slot's callbacks moved. */
/* 7: the kernels slot (Slot::kKernels, KernelsStrategy, memsweep/kernels.h): later slots moved. */
/* 8: memsweep/autocast.h (autocast on every device, the estimate's meta device included) and
 *    checkpoint::ForwardState's meta autocast members. */
/* 9: Strategy::StageHooks (the hooks a strategy declares; the host calls only those),
 *    HookPoint and StageHook. */
/* 10: the optimizer slot (Slot::kOptimizer after kPrecision, OptimizerStrategy,
 *     memsweep/optimizer.h: Optimizer; OptimizerStepSpec moved there): later slots moved. */
#define MEMSWEEP_PLUGIN_ABI_VERSION 10u
#define MEMSWEEP_PLUGIN_ENTRY_SYMBOL "memsweep_plugin_info"

typedef enum MemsweepParamType {
  MEMSWEEP_PARAM_INT = 0,
  MEMSWEEP_PARAM_FLOAT = 1,
  MEMSWEEP_PARAM_BOOL = 2,
  MEMSWEEP_PARAM_STRING = 3,
  MEMSWEEP_PARAM_BYTES = 4, /* a size: "64MiB", "2GiB" or an integer byte count */
  MEMSWEEP_PARAM_STRINGS = 5 /* a list of strings; one string reads as a list of one */
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
  const char* torch_version;    /* TORCH_VERSION, e.g. "2.11.0" */
  const char* compiler;         /* e.g. "gcc 12.2" */
  int cxx11_abi;                /* _GLIBCXX_USE_CXX11_ABI */
  const char* memsweep_version; /* the SDK's memsweep version, e.g. "0.1.0" */
  const char* sdk_hash;         /* SHA-256 (first 16 hex digits) of the SDK headers' text */
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
