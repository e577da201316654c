#pragma once
// The thread machinery of the host emulation of CUDA (cuda_host_emulation.h, and
// cuda_sm90_host_emulation.h for the Hopper kernel): every CUDA thread of a block is a fiber (a
// ucontext with a stack of its own) on the calling thread, __syncthreads() a barrier over the
// block, __syncwarp() one over the warp, __shfl_xor_sync an exchange through the warp's barrier;
// blocks run one after another. A fiber runs until it waits at a barrier, then the next one
// runs: the interleavings differ from a GPU's, but what the barriers order is all a kernel may
// rely on. The fibers run in thread order by default, and in reverse or in a seeded shuffle
// under a ThreadOrderGuard, so that a kernel missing a barrier (a lower thread writes what a
// higher one reads, or the other way round) gives other bits in another order: the tests run
// their kernels in each (in_every_thread_order, emulation_orders.h). Each fiber's stack has a
// guard page below it (an overflow faults instead of writing into the next stack), and an
// exception thrown by a kernel's thread ends the launch with an error naming the thread. (OS threads, one per CUDA thread, did the same at several times the cost: 256 threads
// woken at every barrier of a block on two cores.) A pass over the block in which no thread
// moved is a deadlock (threads waiting at different barriers), reported and aborted. The barriers
// also compare the warp collectives each lane has called (warp_collective), as the device
// requires them to be the same. Needs dim3 and uint3: the emulated ones of cuda_host_emulation.h
// or CUDA's own (the real headers compiled for the host, as CuTe includes them).
#include <sys/mman.h>
#include <ucontext.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_HOST_EMULATION_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_HOST_EMULATION_ASAN 1
#endif
#endif
#ifdef CUDA_HOST_EMULATION_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace cuda_host_emulation {

// The order in which each pass of the scheduler resumes a block's waiting fibers: thread order,
// its reverse, or a permutation drawn afresh for every pass (and block) from a seed.
enum class ThreadOrder { forward, reverse, shuffled };
struct OrderSetting {
  ThreadOrder order = ThreadOrder::forward;
  std::uint64_t seed = 0;
};
inline thread_local OrderSetting order_setting;

// Sets the order for the launches of its lifetime.
class ThreadOrderGuard {
 public:
  explicit ThreadOrderGuard(ThreadOrder order, std::uint64_t seed = 0) : previous_(order_setting) {
    order_setting = {order, seed};
  }
  ~ThreadOrderGuard() { order_setting = previous_; }
  ThreadOrderGuard(const ThreadOrderGuard&) = delete;
  ThreadOrderGuard& operator=(const ThreadOrderGuard&) = delete;

 private:
  OrderSetting previous_;
};

// SplitMix64: the shuffles' generator.
inline std::uint64_t mix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The fibers' order for one pass.
inline void pass_order(std::vector<unsigned>& order, std::uint64_t& state) {
  std::iota(order.begin(), order.end(), 0u);
  if (order_setting.order == ThreadOrder::reverse) {
    std::reverse(order.begin(), order.end());
  } else if (order_setting.order == ThreadOrder::shuffled) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[mix(state) % i]);
  }
}

// Moves: arrivals, releases and exits, counted so that the scheduler sees a pass without any.
inline thread_local std::uint64_t moves = 0;

// The calling thread's side of the fibers: its context, and its stack as AddressSanitizer knows it.
struct Scheduler {
  ucontext_t context;
  const void* stack = nullptr;
  std::size_t stack_size = 0;
};
inline thread_local Scheduler scheduler;

struct Fiber {
  ucontext_t context;
  char* stack = nullptr;
  std::size_t stack_size = 0;
  unsigned thread = 0;
  bool done = false;
  void* fake_stack = nullptr;  // AddressSanitizer's, while the fiber is switched out
};
inline thread_local Fiber* running = nullptr;

// From the running fiber back to the scheduler (finished: its fake stack is released).
inline void switch_to_scheduler(bool finished) {
  Fiber& f = *running;
#ifdef CUDA_HOST_EMULATION_ASAN
  __sanitizer_start_switch_fiber(finished ? nullptr : &f.fake_stack, scheduler.stack, scheduler.stack_size);
#endif
  if (finished) return;  // the fiber's function returns; uc_link resumes the scheduler
  swapcontext(&f.context, &scheduler.context);
#ifdef CUDA_HOST_EMULATION_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, &scheduler.stack, &scheduler.stack_size);
#endif
}

// A barrier of a block's fibers, with std::barrier's two calls.
class Barrier {
 public:
  explicit Barrier(unsigned count) : expected_(count) {}
  void arrive_and_wait() {
    const std::uint64_t phase = phase_;
    ++moves;
    if (++arrived_ == expected_) release();
    while (phase_ == phase) switch_to_scheduler(false);
  }
  // Leaves the barrier: it no longer waits for the caller, in this phase and the next.
  void arrive_and_drop() {
    ++moves;
    --expected_;
    if (arrived_ > 0 && arrived_ == expected_) release();
  }

 private:
  void release() {
    arrived_ = 0;
    ++phase_;
  }
  unsigned expected_, arrived_ = 0;
  std::uint64_t phase_ = 0;
};

struct Block {
  explicit Block(unsigned threads) : barrier(threads), exchange(threads) {
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) {
      const unsigned lanes = threads - 32 * w < 32 ? threads - 32 * w : 32;
      warps.push_back(std::make_unique<Barrier>(lanes));
    }
  }
  Barrier barrier;
  std::vector<std::unique_ptr<Barrier>> warps;
  std::vector<float> exchange;  // one slot per thread, for shuffles
  // Per lane: a running record (hash) of the wmma collectives it called; two slots to compare
  // them in at barriers, used alternately, and the number of barriers it has passed.
  std::vector<std::uint64_t> collective_record = std::vector<std::uint64_t>(exchange.size(), 0);
  std::vector<std::uint64_t> posted = std::vector<std::uint64_t>(2 * exchange.size(), 0);
  std::vector<unsigned> barriers_passed = std::vector<unsigned>(exchange.size(), 0);
};

inline thread_local Block* current = nullptr;

// The fibers' stacks: 1 MiB each (CuTe's register tensors, and AddressSanitizer's redzones, live
// there), reserved once per launch and touched only as far as used, each above a guard page that
// no access may touch (stacks grow down: a fiber that overflows its stack faults there instead of
// writing over the next fiber's).
class Stacks {
 public:
  static constexpr std::size_t kBytes = std::size_t{1} << 20;
  explicit Stacks(unsigned count)
      : guard_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))), stride_(kBytes + guard_), bytes_(stride_ * count) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "cuda_host_emulation: no memory for %u fiber stacks\n", count);
      std::abort();
    }
    base_ = static_cast<char*>(p);
    for (unsigned i = 0; i < count; ++i)
      if (mprotect(base_ + stride_ * i, guard_, PROT_NONE) != 0) {
        std::fprintf(stderr, "cuda_host_emulation: cannot protect the guard page of fiber stack %u\n", i);
        std::abort();
      }
  }
  ~Stacks() { munmap(base_, bytes_); }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;
  // The lowest address of fiber i's stack (its guard page just below).
  char* stack(unsigned i) const { return base_ + stride_ * i + guard_; }

 private:
  std::size_t guard_, stride_, bytes_;
  char* base_;
};

// The first exception a thread of the launch threw, with the thread it came from.
struct Thrown {
  std::exception_ptr error;
  unsigned thread = 0;
  uint3 block;
};
inline thread_local Thrown thrown;

// Runs one fiber of the block until it waits or finishes; its CUDA thread index set first.
inline void resume(Fiber& f) {
  running = &f;
  threadIdx = {f.thread, 0, 0};
#ifdef CUDA_HOST_EMULATION_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, f.stack, f.stack_size);
#endif
  swapcontext(&scheduler.context, &f.context);
#ifdef CUDA_HOST_EMULATION_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  running = nullptr;
}

template <typename Body>
struct FiberStart {
  Body* body;
  Block* block;
  static void run(unsigned high, unsigned low) {
    auto* start = reinterpret_cast<FiberStart*>((static_cast<std::uintptr_t>(high) << 32) | low);
#ifdef CUDA_HOST_EMULATION_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &scheduler.stack, &scheduler.stack_size);
#endif
    Fiber& f = *running;
    // An exception must not unwind past the fiber's first frame: it is kept, the thread leaves the
    // barriers as if it had returned, and launch() throws it once the block has ended.
    try {
      (*start->body)();
    } catch (...) {
      if (!thrown.error) thrown = {std::current_exception(), f.thread, blockIdx};
    }
    start->block->warps[f.thread / 32]->arrive_and_drop();
    start->block->barrier.arrive_and_drop();
    f.done = true;
    ++moves;
    switch_to_scheduler(true);
  }
};

// Runs body() once per thread of every block of `grid`, blocks one after another, the threads of
// a block as fibers, resumed in the order of order_setting. A thread that returns early leaves the
// block's and its warp's barriers (as an exited thread no longer takes part in __syncthreads on
// the device). An exception from a thread ends the launch after its block: std::runtime_error
// naming the thread and the block, with the exception's text.
template <typename Body>
void launch(dim3 grid, unsigned threads, Body body) {
  const Stacks stacks(threads);
  std::vector<Fiber> fibers(threads);
  std::vector<unsigned> order(threads);
  std::uint64_t shuffle_state = order_setting.seed;
  thrown = {};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block block(threads);
        blockIdx = {x, y, z};
        blockDim = dim3(threads);
        gridDim = grid;
        current = &block;
        FiberStart<Body> start{&body, &block};
        const auto address = reinterpret_cast<std::uintptr_t>(&start);
        for (unsigned t = 0; t < threads; ++t) {
          Fiber& f = fibers[t];
          f = Fiber{};
          f.thread = t;
          f.stack = stacks.stack(t);
          f.stack_size = Stacks::kBytes;
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack;
          f.context.uc_stack.ss_size = f.stack_size;
          f.context.uc_link = &scheduler.context;
          makecontext(&f.context, reinterpret_cast<void (*)()>(&FiberStart<Body>::run), 2,
                      static_cast<unsigned>(address >> 32), static_cast<unsigned>(address & 0xffffffffu));
        }
        for (unsigned live = threads; live > 0;) {
          const std::uint64_t before = moves;
          pass_order(order, shuffle_state);
          for (const unsigned t : order) {
            Fiber& f = fibers[t];
            if (f.done) continue;
            resume(f);
            if (f.done) --live;
          }
          if (live > 0 && moves == before) {
            std::fprintf(stderr,
                         "cuda_host_emulation: block (%u, %u, %u): %u threads wait and none can go on "
                         "(threads at different barriers)\n",
                         x, y, z, live);
            std::abort();
          }
        }
        current = nullptr;
        if (thrown.error) {
          const Thrown t = thrown;
          thrown = {};
          std::string what = "an exception that is not a std::exception";
          try {
            std::rethrow_exception(t.error);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          throw std::runtime_error("cuda_host_emulation: thread " + std::to_string(t.thread) + " of block (" +
                                   std::to_string(t.block.x) + ", " + std::to_string(t.block.y) + ", " +
                                   std::to_string(t.block.z) + ") threw: " + what);
        }
      }
}

// A barrier that also checks that every lane of the caller's warp has called the same wmma
// collectives (in the same order) so far, as the device requires of warp collectives. Barriers
// alternate between two slots per lane: a lane cannot reach the barrier after next before every
// lane of its warp has passed the next one, so no slot is overwritten while it is being read.
template <typename Wait>
void checked_barrier(Wait wait) {
  auto& b = *current;
  const unsigned t = threadIdx.x, warp = t / 32;
  const unsigned threads = static_cast<unsigned>(b.exchange.size());
  const unsigned lanes = threads - 32 * warp < 32 ? threads - 32 * warp : 32;
  const unsigned slot = (b.barriers_passed[t]++ % 2) * threads;
  b.posted[slot + t] = b.collective_record[t];
  wait();
  for (unsigned l = 0; l < lanes; ++l)
    if (b.posted[slot + warp * 32 + l] != b.collective_record[t]) {
      std::fprintf(stderr,
                   "cuda_host_emulation: lanes of warp %u of block (%u, %u) called different wmma collectives\n", warp,
                   blockIdx.x, blockIdx.y);
      std::abort();
    }
}

}  // namespace cuda_host_emulation

inline void __syncthreads() {
  cuda_host_emulation::checked_barrier([] { cuda_host_emulation::current->barrier.arrive_and_wait(); });
}

inline void __syncwarp(unsigned = 0xffffffffu) {
  cuda_host_emulation::checked_barrier(
      [] { cuda_host_emulation::current->warps[threadIdx.x / 32]->arrive_and_wait(); });
}

// Every lane of the warp takes part (the kernels call it with the full mask).
inline float __shfl_xor_sync(unsigned, float value, int lane_mask) {
  auto& b = *cuda_host_emulation::current;
  const unsigned t = threadIdx.x, warp = t / 32, lane = t % 32;
  b.exchange[t] = value;
  b.warps[warp]->arrive_and_wait();
  const float other = b.exchange[warp * 32 + (lane ^ static_cast<unsigned>(lane_mask))];
  b.warps[warp]->arrive_and_wait();
  return other;
}

namespace cuda_host_emulation {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "cuda_host_emulation: thread %u of block (%u, %u): %s\n", threadIdx.x, blockIdx.x, blockIdx.y,
               what);
  std::abort();
}

// A warp collective: the lane folds it into its running record of the collectives it called,
// which __syncwarp and __syncthreads compare across the warp.
inline void warp_collective(int which) {
  auto& h = current->collective_record[threadIdx.x];
  h = h * 1000003u + static_cast<std::uint64_t>(which);
}

}  // namespace cuda_host_emulation
