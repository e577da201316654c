#pragma once
// The emulated Hopper forward on a case of support/flash_emulated_cases.h: the forward's test
// checks its out and lse, the backward's test starts from them, as on the device. Include after
// support/flash_emulated_cases.h and flash_sm90_forward_kernel.cuh.
#include <cstdint>
#include <vector>

namespace flash_emulated_cases {

namespace sm90 = attnlab::flash::cuda::sm90;

// The Hopper kernels' grid over rows (queries or keys): (B * H, blocks of 128 rows).
inline dim3 sm90_grid(const Case& c, std::int64_t rows) {
  return dim3(static_cast<unsigned>(c.b * c.h), static_cast<unsigned>((rows + sm90::kBlockM - 1) / sm90::kBlockM));
}
// Whether the kernels take their kExtras path: a mask, position terms or dropout (as the launchers
// decide); with bucket values the forward takes its kValues variant of it.
inline bool sm90_extras(const Case& c) { return c.mask || c.terms || c.dropout > 0.0; }

// The kernels' inputs of a prepared case.
template <int D>
k::Inputs<__nv_bfloat16> sm90_inputs(const Case& c, const Prepared<__nv_bfloat16, D, D>& r) {
  return {r.q.device.data(), r.k.device.data(), r.v.device.data(), r.mask_ptr(), r.lengths_ptr(),
          c.h, c.tq, c.tk, c.causal, r.scale, r.drop, r.terms(c.tq, c.tk), {}};
}

// out [B, H, Tq, D] and lse [B, H, Tq] of the emulated Hopper forward.
template <int D>
void run_sm90_forward(const Case& c, const k::Inputs<__nv_bfloat16>& in, std::vector<__nv_bfloat16>& out,
                      std::vector<float>& lse) {
  REQUIRE(c.value_clip <= sm90::kEmulatedValueClip);  // the emulated shared memory's room
  out.assign(static_cast<std::size_t>(c.b * c.h * c.tq * D), __nv_bfloat16());
  lse.assign(static_cast<std::size_t>(c.b * c.h * c.tq), 0.0f);
  emu::launch(sm90_grid(c, c.tq), sm90::kThreads, [&] {
    if (c.terms && c.value_terms) sm90::forward_kernel<D, true, true>(in, out.data(), lse.data());
    else if (sm90_extras(c)) sm90::forward_kernel<D, true, false>(in, out.data(), lse.data());
    else sm90::forward_kernel<D, false, false>(in, out.data(), lse.data());
  });
}

}  // namespace flash_emulated_cases
