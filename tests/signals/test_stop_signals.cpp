// Ctrl-C (SIGINT) and SIGTERM while the compute threads multiply: after
// install_stop_signal_handlers() every thread started blocks them and one thread waits for them,
// so a storm of SIGINTs sent during f32 matmuls on the CPU (oneDNN's JIT sgemm where the build and
// the CPU have it: its kernels point the stack pointer into the heap while they run, and a signal
// handler's frame written there corrupted the heap) changes no product and reaches the stop flag.
// A test program of its own: its OpenMP threads start after the installation, as in attnlab's
// commands.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "attnlab/attnlab.h"
#include "attnlab/nmt/train/stop_signals.h"
#include "cpu/onednn_sgemm.h"
#include "support/tensor_testing.h"

namespace {

using namespace attnlab;

// Every thread of this process: its id and name, and its blocked-signal mask (SigBlk of
// /proc/self/task/ID/status).
struct ThreadMask {
  std::string id, name;
  unsigned long long blocked = 0;
};
std::vector<ThreadMask> blocked_masks() {
  std::vector<ThreadMask> masks;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    ThreadMask m{task.path().filename().string(), "", 0};
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Name:", 0) == 0) m.name = line.substr(6);
      if (line.rfind("SigBlk:", 0) == 0) m.blocked = std::stoull(line.substr(7), nullptr, 16);
    }
    masks.push_back(m);
  }
  return masks;
}

}  // namespace

TEST_CASE("stop signals during cpu matmuls change no product and reach the stop flag") {
  nmt::install_stop_signal_handlers();
  const Tensor a = testing::random_tensor({192, 256}, 1);
  const Tensor b = testing::random_tensor({256, 320}, 2);
  const std::vector<float> want = matmul(a, b).to_vector<float>();
  const std::uint64_t onednn_before = cpu::onednn_sgemm_calls();

  std::atomic<bool> done{false};
  std::atomic<int> sent{0};
  std::thread sender([&] {
    while (!done.load()) {
      ::kill(::getpid(), SIGINT);
      sent.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  int differing = 0;
  for (int i = 0; i < 400; ++i)
    if (matmul(a, b).to_vector<float>() != want) ++differing;
  // Every thread, the OpenMP workers and the sender included, blocks SIGINT and SIGTERM, except
  // the signal thread while it waits for them in sigwait.
  const std::vector<ThreadMask> masks = blocked_masks();
  done.store(true);
  sender.join();

  const std::string gemm =
      cpu::onednn_sgemm_calls() > onednn_before ? "oneDNN's sgemm" : "OpenBLAS's sgemm (no oneDNN here)";
  MESSAGE(sent.load(), " SIGINTs during 400 products (", gemm, "), ", masks.size(), " threads");
  CHECK(sent.load() > 50);
  CHECK(differing == 0);
  CHECK(masks.size() >= 3);  // this thread, the signal thread and the sender at least
  int waiting = 0;
  for (const ThreadMask& m : masks) {
    CAPTURE(m.id);
    CAPTURE(m.name);
    CAPTURE(m.blocked);
    if (m.name == nmt::kStopSignalThread) {
      ++waiting;
      continue;
    }
    CHECK((m.blocked & (1ull << (SIGINT - 1))) != 0);
    CHECK((m.blocked & (1ull << (SIGTERM - 1))) != 0);
  }
  CHECK(waiting == 1);
  CHECK(nmt::stop_requested());
  nmt::clear_stop_request();
  CHECK_FALSE(nmt::stop_requested());
}
