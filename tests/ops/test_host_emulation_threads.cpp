// The host emulation's threads (support/cuda_host_threads.h): a block's threads as fibers whose
// barriers order their writes and reads as __syncthreads, __syncwarp and __shfl_xor_sync do on
// the device, threads that return early leave the barriers, and threads waiting at different
// barriers are reported and aborted instead of hanging.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"

namespace emu = cuda_host_emulation;

TEST_CASE("emulated threads: a barrier orders every write before every read, block after block") {
  constexpr unsigned kThreads = 96;
  std::vector<int> slots(kThreads), seen(3 * kThreads, -1);
  emu::launch(dim3(3), kThreads, [&] {
    const unsigned t = threadIdx.x;
    for (int round = 0; round < 3; ++round) {
      slots[t] = static_cast<int>(1000 * blockIdx.x + 10 * t + round);
      __syncthreads();
      // The neighbour across the block, whose write in this round came before the barrier.
      const int read = slots[(t + 37) % kThreads];
      if (round == 2) seen[blockIdx.x * kThreads + t] = read;
      __syncthreads();  // every read of this round before the next round's writes
    }
  });
  for (unsigned b = 0; b < 3; ++b)
    for (unsigned t = 0; t < kThreads; ++t)
      CHECK(seen[b * kThreads + t] == static_cast<int>(1000 * b + 10 * ((t + 37) % kThreads) + 2));
}

TEST_CASE("emulated threads: shuffles exchange within a warp, and threads that return leave the barriers") {
  std::vector<float> sums(64, 0.0f);
  emu::launch(dim3(1), 64, [&] {
    const unsigned t = threadIdx.x;
    float v = static_cast<float>(t);
    for (int mask = 16; mask >= 1; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
    sums[t] = v;  // every lane: the sum over its warp
    if (t % 2 == 1) return;  // half the block leaves; the rest still meet at its barriers
    __syncthreads();
    __syncwarp();
    __syncthreads();
  });
  for (unsigned t = 0; t < 64; ++t) CHECK(sums[t] == (t < 32 ? 496.0f : 1520.0f));
}

TEST_CASE("emulated threads: threads waiting at different barriers are a deadlock, reported and aborted") {
  int pipe_ends[2];
  REQUIRE(::pipe(pipe_ends) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(pipe_ends[1], STDERR_FILENO);
    emu::launch(dim3(1), 32, [] {
      if (threadIdx.x == 0) __syncwarp();  // lane 0 at the warp's barrier, the others at the block's
      else __syncthreads();
    });
    ::_exit(0);  // not reached
  }
  ::close(pipe_ends[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_ends[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(text.find("block (0, 0, 0): 32 threads wait and none can go on (threads at different barriers)") !=
        std::string::npos);
}
