// The index math of the Hopper flash kernels (plugins/attention/flash/flash_sm90_layouts.cuh),
// checked on the CPU for every thread of a block: CuTe's layouts are host code too. What the
// kernels rely on without checking it at run time:
//   - the rows-by-columns view of an accumulator puts one query per row, the score and output
//     accumulators hold the same rows, and the 4 threads that share a row are lanes 4 r .. 4 r + 3
//     of one warp (the kernel reduces over them with __shfl_xor_sync 1 and 2);
//   - each element of the score and output tiles is held by exactly one thread, and each row has
//     exactly one thread with threadIdx % 4 == 0 among its holders (it writes the row's lse);
//   - the score accumulator, reread as an A operand, holds exactly what the register-A MMA of
//     P V expects at each register;
//   - the swizzled shared-memory tiles are one-to-one onto their buffers, keep every 8 elements
//     that one cp.async writes contiguous, and fit sm_90's 227 KiB with the alignment slack;
//   - in the backward, the score accumulators reread as A operands are what the gradient
//     products expect, and a walked tile's (d, row) view reads the elements its (row, d) view
//     wrote.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "flash_sm90_layouts.cuh"

namespace {

using namespace cute;
namespace sm90 = attnlab::flash::cuda::sm90;
using sm90::kBlockM;
using sm90::kBlockN;
using sm90::kThreads;

using RowCol = std::pair<int, int>;

// (row, column) of every element thread t holds of an M x N accumulator of `mma`, as the kernel's
// rows-by-columns view: result[r][c].
template <class Mma, int M, int N>
std::vector<std::vector<RowCol>> held(const Mma& mma, int t) {
  const auto thr = mma.get_thread_slice(t);
  const Tensor c = thr.partition_C(make_identity_tensor(Shape<Int<M>, Int<N>>{}));
  const Tensor rc = make_tensor(c.data(), sm90::rows_by_columns(c.layout()));
  std::vector<std::vector<RowCol>> out(size<0>(rc));
  for (int r = 0; r < size<0>(rc); ++r)
    for (int col = 0; col < size<1>(rc); ++col) out[r].emplace_back(get<0>(rc(r, col)), get<1>(rc(r, col)));
  return out;
}

template <int D>
void check_accumulators() {
  using T = sm90::Tiles<D>;
  const typename T::MmaS mma_s;
  const typename T::MmaO mma_o;
  std::vector<std::vector<int>> s_count(kBlockM, std::vector<int>(kBlockN)), o_count(kBlockM, std::vector<int>(D));
  std::vector<int> lse_writers(kBlockM);
  std::vector<std::vector<int>> rows_of(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    const auto s = held<typename T::MmaS, kBlockM, kBlockN>(mma_s, t);
    const auto o = held<typename T::MmaO, kBlockM, D>(mma_o, t);
    REQUIRE(s.size() == 2);
    REQUIRE(o.size() == s.size());
    for (std::size_t r = 0; r < s.size(); ++r) {
      const int row = s[r][0].first;
      CHECK(row / 64 == t / 128);  // warpgroup g holds queries 64 g .. 64 g + 63
      rows_of[t].push_back(row);
      for (const RowCol& e : s[r]) {
        CHECK(e.first == row);
        ++s_count[e.first][e.second];
      }
      for (const RowCol& e : o[r]) {
        CHECK(e.first == row);
        ++o_count[e.first][e.second];
      }
      if (t % 4 == 0) ++lse_writers[row];
    }
  }
  for (int t = 0; t < kThreads; ++t)
    for (int lane_xor : {1, 2, 3}) CHECK(rows_of[t] == rows_of[t ^ lane_xor]);
  int s_once = 0, o_once = 0, one_writer = 0;
  for (int i = 0; i < kBlockM; ++i) {
    for (int j = 0; j < kBlockN; ++j) s_once += s_count[i][j] == 1;
    for (int d = 0; d < D; ++d) o_once += o_count[i][d] == 1;
    one_writer += lse_writers[i] == 1;
  }
  CHECK(s_once == kBlockM * kBlockN);
  CHECK(o_once == kBlockM * D);
  CHECK(one_writer == kBlockM);
}

// The kBlockM x N accumulator of `produce`, reread as an A operand, is at every register what the
// register-A MMA `consume` (whose K is N) expects there.
template <class Produce, class Consume, int N>
void check_as_a_operand() {
  const Produce mma_s;
  const Consume mma_o;
  int compared = 0, equal = 0;
  for (int t = 0; t < kThreads; ++t) {
    const Tensor c = mma_s.get_thread_slice(t).partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<N>>{}));
    const Tensor as_a = make_tensor(c.data(), sm90::as_a_operand(c.layout()));
    const Tensor want = mma_o.get_thread_slice(t).partition_A(make_identity_tensor(Shape<Int<kBlockM>, Int<N>>{}));
    REQUIRE(size(as_a) == size(want));
    REQUIRE(size(as_a) == size(c));
    for (int e = 0; e < size(want); ++e) {
      ++compared;
      equal += as_a(e) == want(e);
    }
  }
  CHECK(compared == kBlockM * N);
  CHECK(equal == compared);
}
template <int D>
void check_p_as_a_operand() {
  using T = sm90::Tiles<D>;
  check_as_a_operand<typename T::MmaS, typename T::MmaO, kBlockN>();
}

// Offsets, in elements from a 1024-byte-aligned base, of a swizzled tile's (a, b) elements.
template <class Layout, int A, int B>
std::vector<std::vector<long>> element_offsets() {
  alignas(1024) static sm90::Bf16 buffer[A * B];
  const Tensor tile = make_tensor(make_smem_ptr(buffer), Layout{});
  std::vector<std::vector<long>> out(A, std::vector<long>(B));
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b) out[a][b] = &tile(a, b) - buffer;
  return out;
}

// A tile is one-to-one onto [0, A B), and elements (a, b .. b + 7) (b a multiple of 8; with
// `contiguous_a`, (a .. a + 7, b)) lie at 8 consecutive offsets.
template <class Layout, int A, int B>
void check_tile(bool contiguous_a) {
  const auto off = element_offsets<Layout, A, B>();
  std::set<long> seen;
  for (const auto& row : off) seen.insert(row.begin(), row.end());
  CHECK(seen.size() == static_cast<std::size_t>(A * B));
  CHECK(*seen.begin() == 0);
  CHECK(*seen.rbegin() == A * B - 1);
  int chunks = 0, contiguous = 0;
  for (int a = 0; a < A; a += contiguous_a ? 8 : 1)
    for (int b = 0; b < B; b += contiguous_a ? 1 : 8) {
      ++chunks;
      bool ok = true;
      for (int e = 1; e < 8; ++e) ok = ok && (contiguous_a ? off[a + e][b] : off[a][b + e]) == off[a][b] + e;
      contiguous += ok;
    }
  CHECK(chunks == A * B / 8);
  CHECK(contiguous == chunks);
}

template <int D>
void check_shared_memory() {
  using T = sm90::Tiles<D>;
  check_tile<typename T::SmemQ, kBlockM, D>(false);
  check_tile<typename T::SmemK, kBlockN, D>(false);
  check_tile<typename T::SmemV, D, kBlockN>(true);
  CHECK(cosize(typename T::SmemQ{}) == T::q_elements);
  CHECK(cosize(typename T::SmemV{}) == T::kv_elements);
  // Every tile starts at a multiple of 1024 bytes from the aligned base.
  CHECK(T::q_elements * 2 % 1024 == 0);
  CHECK(T::kv_elements * 2 % 1024 == 0);
  CHECK(T::smem_bytes <= 227 * 1024);
}

// The backward's tiles: its score accumulators (S, dP, S^T, dP^T) reread as the A operands of the
// gradient products; the block's row tiles and the walked tiles one-to-one and cp.async-friendly,
// the walked tile's (d, row) view at the very elements of its (row, d) one, and the block in
// sm_90's shared memory.
template <int D>
void check_backward_tiles() {
  using T = sm90::BackwardTiles<D>;
  check_as_a_operand<typename T::MmaS, typename T::MmaG, sm90::kBwdN>();
  check_tile<typename T::Rows, kBlockM, D>(false);
  check_tile<typename T::Walk, sm90::kBwdN, D>(false);
  check_tile<typename T::WalkT, D, sm90::kBwdN>(true);
  const auto walk = element_offsets<typename T::Walk, sm90::kBwdN, D>();
  const auto walk_t = element_offsets<typename T::WalkT, D, sm90::kBwdN>();
  int same = 0;
  for (int r = 0; r < sm90::kBwdN; ++r)
    for (int d = 0; d < D; ++d) same += walk[r][d] == walk_t[d][r];
  CHECK(same == sm90::kBwdN * D);
  CHECK(cosize(typename T::Rows{}) == T::rows_elements);
  CHECK(cosize(typename T::Walk{}) == T::walk_elements);
  CHECK(T::rows_elements * 2 % 1024 == 0);
  CHECK(T::walk_elements * 2 % 1024 == 0);
  CHECK(T::smem_bytes <= 227 * 1024);
}

}  // namespace

TEST_CASE("flash sm90: every accumulator row is one query, shared by a quad of lanes, tiles covered once") {
  check_accumulators<64>();
  check_accumulators<128>();
}

TEST_CASE("flash sm90: the score accumulator read as an A operand is what the P V product expects") {
  check_p_as_a_operand<64>();
  check_p_as_a_operand<128>();
}

TEST_CASE("flash sm90: the swizzled tiles are one-to-one, keep cp.async chunks contiguous and fit") {
  check_shared_memory<64>();
  check_shared_memory<128>();
}

TEST_CASE("flash sm90: the backward's accumulators feed its gradient products, its tiles are one-to-one") {
  check_backward_tiles<64>();
  check_backward_tiles<128>();
}
