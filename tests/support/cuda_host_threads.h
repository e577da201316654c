#pragma once
// The thread machinery of the host emulation of CUDA (cuda_host_emulation.h, and
// cuda_sm90_host_emulation.h for the Hopper kernel): every CUDA thread of a block is a fiber (a
// ucontext with a stack of its own) on the calling thread, __syncthreads() a barrier over the
// block, __syncwarp() one over the warp, __shfl_xor_sync an exchange through the warp's barrier;
// blocks run one after another. A fiber runs until it waits at a barrier, then the next one
// runs: the interleavings differ from a GPU's, but what the barriers order is all a kernel may
// rely on. (OS threads, one per CUDA thread, did the same at several times the cost: 256 threads
// woken at every barrier of a block on two cores.) A pass over the block in which no thread
// moved is a deadlock (threads waiting at different barriers), reported and aborted. The barriers
// also compare the warp collectives each lane has called (warp_collective), as the device
// requires them to be the same. Needs dim3 and uint3: the emulated ones of cuda_host_emulation.h
// or CUDA's own (the real headers compiled for the host, as CuTe includes them).
#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
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
// there), reserved once per launch and touched only as far as used.
class Stacks {
 public:
  static constexpr std::size_t kBytes = std::size_t{1} << 20;
  explicit Stacks(unsigned count) : bytes_(kBytes * count) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "cuda_host_emulation: no memory for %u fiber stacks\n", count);
      std::abort();
    }
    base_ = static_cast<char*>(p);
  }
  ~Stacks() { munmap(base_, bytes_); }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;
  char* stack(unsigned i) const { return base_ + kBytes * i; }

 private:
  std::size_t bytes_;
  char* base_;
};

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
    (*start->body)();
    start->block->warps[f.thread / 32]->arrive_and_drop();
    start->block->barrier.arrive_and_drop();
    f.done = true;
    ++moves;
    switch_to_scheduler(true);
  }
};

// Runs body() once per thread of every block of `grid`, blocks one after another, the threads of
// a block as fibers. A thread that returns early leaves the block's and its warp's barriers
// (as an exited thread no longer takes part in __syncthreads on the device).
template <typename Body>
void launch(dim3 grid, unsigned threads, Body body) {
  const Stacks stacks(threads);
  std::vector<Fiber> fibers(threads);
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
          for (Fiber& f : fibers) {
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
