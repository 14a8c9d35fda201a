// SPIRV-Tools' parse -> IR -> emit round trip, for the rewrite bench: spvtools::Optimizer::Run
// with no passes and the validator off (Optimizer::Run validates first by default, which is
// most of its time and not what a rewrite is compared with).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spirv-tools/optimizer.hpp"

namespace {
struct Shim {
  spvtools::Optimizer optimizer;
  spvtools::OptimizerOptions options;
  std::vector<uint32_t> out;
  explicit Shim(spv_target_env env) : optimizer(env) {
    options.set_run_validator(false);
    optimizer.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
  }
};
}  // namespace

// Vulkan 1.3 (SPIR-V 1.6): accepts every version the corpora use.
extern "C" void* spvshim_new() { return new Shim(SPV_ENV_VULKAN_1_3); }

extern "C" void spvshim_free(void* shim) { delete static_cast<Shim*>(shim); }

// Runs the round trip on `words`; returns the output's word count (the output stays in the
// shim, reused by the next call) or -1 when SPIRV-Tools fails.
extern "C" long spvshim_roundtrip(void* p, const uint32_t* words, size_t count) {
  Shim* shim = static_cast<Shim*>(p);
  if (!shim->optimizer.Run(words, count, &shim->out, shim->options)) return -1;
  return static_cast<long>(shim->out.size());
}

extern "C" const uint32_t* spvshim_output(void* p) { return static_cast<Shim*>(p)->out.data(); }
