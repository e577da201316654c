#pragma once
// Score expressions compiled for the CPU, for fused attention kernels (flash's CPU path): a tile
// function per direction and scalar, compiled from the site's program with the system's C++
// compiler into a shared object kept in the kernel cache (ATTNLAB_KERNEL_CACHE), and loaded once
// per process. And the classification of a tile by mask_mod from its positions alone, so that a
// kernel skips tiles the mask removes and evaluates the mask only where it is mixed.
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/expr/device_abi.h"
#include "attnlab/expr/score_expr.h"
#include "attnlab/expr/tile_abi.h"

namespace attnlab::expr {

using TileFn = void (*)(const attnlab_expr_tile*);

struct CpuKernels {
  // forward: the tile's scores -> score_mod's result, -inf where mask_mod removes them (where
  // tile.apply_mask). backward: d raw score = d result x d score_mod / d score (0 where removed
  // or where the result's gradient is 0), and the learned tensors' gradient shares (tile.grads)
  // += d result x d score_mod / d element, over the tile in row-major order.
  TileFn forward_f32 = nullptr, backward_f32 = nullptr;
  TileFn forward_f64 = nullptr, backward_f64 = nullptr;
  std::string library;        // the shared object in the kernel cache
  bool compiled_now = false;  // this process compiled it (it was not in the cache)
};

// The site's CPU kernels; the first call in a process loads them (compiling them first when the
// cache lacks them). Throws an Error naming the compiler and its messages when compiling fails,
// and saying how to choose a compiler (ATTNLAB_CXX) when there is none.
const CpuKernels& cpu_kernels(const ScoreExpr& expr);

// The C++ source cpu_kernels compiles, and whether its shared object is in the cache now.
std::string cpu_kernel_source(const ScoreExpr& expr);
bool cpu_kernels_cached(const ScoreExpr& expr);
// The cache folder (ATTNLAB_KERNEL_CACHE, else $XDG_CACHE_HOME/attnlab/kernels).
std::string kernel_cache_folder();
// Shared objects this process has compiled (each at most once; a second run compiles none).
std::int64_t cpu_kernels_compiled();

// The site's expressions as CUDA C++ (with the helpers the statements call): a struct `name` with
// the members of expr::NoExpressions (attnlab/expr/device_abi.h) that flash's kernels take as
// their Expressions parameter. For NVRTC, and for the kernels' host emulation in the tests. An
// Error when the site reads more than kMaxDeviceTensors tensors.
std::string cuda_expressions_source(const ScoreExpr& expr, const std::string& name);

// A box of positions: batch row b, head h, queries [q_begin, q_end), keys [k_begin, k_end), and the
// row's lengths.
struct TileBox {
  std::int64_t b, h, q_begin, q_end, k_begin, k_end, q_len, kv_len;
};
// The values of device_abi.h's kTileRemoved, kTileKept and kTileMixed.
enum class TileMask : std::uint8_t {
  removed = kTileRemoved,  // mask_mod is false for every pair: no work at all
  kept = kTileKept,        // true for every pair: the mask need not be evaluated
  mixed = kTileMixed,      // either, or not known from the positions: evaluate it per pair
};
// Which of the batch row, the head and the lengths mask_mod reads: tiles of two heads (or batch
// rows) it does not tell apart are classified alike.
struct MaskReads {
  bool b = false, h = false, lengths = false;
};
MaskReads mask_reads(const ScoreExpr& expr);

// The classes of a kernel's tiles of tile_rows queries by tile_cols keys (device_abi.h's layout):
// [by_b ? batch : 1][by_h ? heads : 1][tiles_q][tiles_k], one per group of heads and batch rows that
// mask_mod does not tell apart; empty `classes` without a mask_mod.
struct TileMap {
  std::vector<unsigned char> classes;
  std::int64_t tiles_q = 0, tiles_k = 0;
  bool by_b = false, by_h = false;
};
TileMap tile_map(const ScoreExpr& expr, std::int64_t batch, std::int64_t heads, std::int64_t tq, std::int64_t tk,
                 std::int64_t q_offset, const std::vector<std::int64_t>& q_len, const std::vector<std::int64_t>& kv_len,
                 std::int64_t tile_rows, std::int64_t tile_cols);

// What mask_mod does over `box`, from the ranges of its nodes (interval arithmetic: never wrong,
// sometimes `mixed` where a finer look would tell). `kept` without a mask_mod.
TileMask classify_tile(const ScoreExpr& expr, const TileBox& box);

}  // namespace attnlab::expr
