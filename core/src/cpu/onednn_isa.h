#pragma once
// Whether oneDNN runs with at least an instruction set here: the CPU's own, unless
// DNNL_MAX_CPU_ISA holds oneDNN lower. oneDNN's ISA values nest as bit masks (each set includes
// the bits of those below it). Only for sources built with oneDNN (ATTNLAB_HAVE_DNNL).
#include <oneapi/dnnl/dnnl.h>

namespace attnlab::cpu {

inline bool onednn_runs_with(dnnl_cpu_isa_t isa) {
  const auto mask = static_cast<unsigned>(isa);
  return (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & mask) == mask;
}

}  // namespace attnlab::cpu
