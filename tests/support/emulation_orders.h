#pragma once
// Runs emulated kernels in more than one order of a block's threads (cuda_host_threads.h), so
// that a missing barrier shows: in thread order, in reverse and in a seeded shuffle, their
// results compared bit for bit. A kernel whose threads only meet where a barrier orders them
// writes the same bits in every order.
//
//   const auto [out, lse] = in_every_thread_order([&] { run_forward(...); return std::tuple(out, lse); });
//
// Include after the emulation (cuda_host_emulation.h or cuda_sm90_host_emulation.h).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuda_host_emulation {

// Whether two results hold the same bits: vectors of trivially copyable values byte for byte
// (NaNs included), tuples and pairs member by member.
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  if constexpr (std::is_trivially_copyable_v<T>) {
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
  } else {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_bits(a[i], b[i])) return false;
    return true;
  }
}
template <typename... T>
bool same_bits(const std::tuple<T...>& a, const std::tuple<T...>& b) {
  return std::apply([&](const auto&... x) { return std::apply([&](const auto&... y) { return (same_bits(x, y) && ...); }, b); },
                    a);
}
template <typename A, typename B>
bool same_bits(const std::pair<A, B>& a, const std::pair<A, B>& b) {
  return same_bits(a.first, b.first) && same_bits(a.second, b.second);
}

// The orders besides thread order whose results differ from thread order's: "reverse",
// "shuffled (seed N)"; empty when every order gives the same bits. Also returns thread order's
// result through `first`.
template <typename Run, typename Result = std::invoke_result_t<Run&>>
std::vector<std::string> orders_that_differ(Run& run, Result& first, std::uint64_t seed = 20261207) {
  {
    const ThreadOrderGuard order(ThreadOrder::forward);
    first = run();
  }
  std::vector<std::string> differ;
  {
    const ThreadOrderGuard order(ThreadOrder::reverse);
    if (!same_bits(first, run())) differ.push_back("reverse");
  }
  {
    const ThreadOrderGuard order(ThreadOrder::shuffled, seed);
    if (!same_bits(first, run())) differ.push_back("shuffled (seed " + std::to_string(seed) + ")");
  }
  return differ;
}

// Runs `run` (it launches the kernels on fresh outputs and returns them) in every order, checks
// that they all wrote the same bits, and returns thread order's result.
template <typename Run>
auto in_every_thread_order(Run run) {
  std::invoke_result_t<Run&> first;
  const std::vector<std::string> differ = orders_that_differ(run, first);
  std::string list;
  for (const std::string& d : differ) list += (list.empty() ? "" : ", ") + d;
  CHECK_MESSAGE(differ.empty(), "the emulated kernels wrote other bits with a block's threads in another order (",
                list, "): a barrier is missing");
  return first;
}

}  // namespace cuda_host_emulation
