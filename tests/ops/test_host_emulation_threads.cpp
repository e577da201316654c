// The host emulation's threads (support/cuda_host_threads.h): a block's threads as fibers whose
// barriers order their writes and reads as __syncthreads, __syncwarp and __shfl_xor_sync do on
// the device, threads that return early leave the barriers, threads waiting at different
// barriers are reported and aborted instead of hanging, a kernel missing a barrier is caught by
// running its threads in other orders, an exception names its thread, and a stack overflow faults.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "support/emulation_orders.h"

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

namespace {

// Thread t writes its slot, then reads thread t - 1's: right only with the barrier between. In
// thread order the lower thread has always written first, so a missing barrier did not show.
std::function<std::vector<int>()> neighbour_kernel(bool barrier) {
  return [barrier] {
    std::vector<int> slots(64, -1), seen(64, 0);
    emu::launch(dim3(1), 64, [&] {
      const unsigned t = threadIdx.x;
      slots[t] = static_cast<int>(10 * t + 1);
      if (barrier) __syncthreads();
      seen[t] = t == 0 ? 0 : slots[t - 1];
    });
    return seen;
  };
}

// Uses a little of the stack per call, and writes it, so that no call skips a page.
int deep(int n) {
  volatile char frame[512];
  for (char& c : const_cast<char(&)[512]>(frame)) c = static_cast<char>(n);
  return n == 0 ? frame[0] : deep(n - 1) + frame[n % 512];
}

}  // namespace

TEST_CASE("emulated threads: a kernel missing a barrier gives other bits in reverse and shuffled order") {
  std::vector<int> want(64, 0);
  for (int t = 1; t < 64; ++t) want[static_cast<std::size_t>(t)] = 10 * (t - 1) + 1;
  auto correct = neighbour_kernel(true), broken = neighbour_kernel(false);
  std::vector<int> first;
  CHECK(emu::orders_that_differ(correct, first).empty());
  CHECK(first == want);
  const std::vector<std::string> differ = emu::orders_that_differ(broken, first);
  CHECK(first == want);  // invisible in thread order
  CHECK(differ == std::vector<std::string>{"reverse", "shuffled (seed 20261207)"});
}

TEST_CASE("emulated threads: an exception in a kernel's thread ends the launch with an error naming the thread") {
  int finished = 0;
  CHECK_THROWS_WITH_AS(emu::launch(dim3(2), 64,
                                   [&] {
                                     if (blockIdx.x == 1 && threadIdx.x == 5) throw std::out_of_range("index 99 of 64");
                                     __syncthreads();  // the others do not wait for the thread that threw
                                     ++finished;
                                   }),
                       "cuda_host_emulation: thread 5 of block (1, 0, 0) threw: index 99 of 64", std::runtime_error);
  CHECK(finished == 64 + 63);
  // The next launch starts clean.
  emu::launch(dim3(1), 32, [&] { __syncthreads(); });
}

TEST_CASE("emulated threads: a thread that overflows its stack faults on the guard page below it") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(STDERR_FILENO);  // the fault's report is not this test's output
    // Thread 1's stack lies right above thread 0's: without the guard page between, its overflow
    // would write over thread 0's stack and go on.
    int sink = 0;
    emu::launch(dim3(1), 2, [&] {
      if (threadIdx.x == 1) sink = deep(2900);  // about 1.5 MiB of frames in a 1 MiB stack
    });
    ::_exit(sink == 12345 ? 3 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  // A fault: SIGSEGV, or AddressSanitizer's report of it and a non-zero exit.
  CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3)));
}
