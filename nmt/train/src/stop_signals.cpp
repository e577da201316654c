#include "attnlab/nmt/train/stop_signals.h"

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

#include <pthread.h>

namespace attnlab::nmt {
namespace {

std::atomic<bool> g_stop{false};

// A thread started before install_stop_signal_handlers() (none in attnlab's commands) may still
// be the one a signal is delivered to: it runs this handler.
extern "C" void on_stop_signal(int) { g_stop.store(true); }

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }
void clear_stop_request() { g_stop.store(false); }

void install_stop_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // The waiting thread inherits the mask, as sigwait needs (which unblocks them while it waits:
    // /proc shows them unblocked in this thread alone); it lives as long as the process.
    std::thread([set] {
      pthread_setname_np(pthread_self(), kStopSignalThread);
      for (;;) {
        int signal = 0;
        if (sigwait(&set, &signal) == 0) g_stop.store(true);
      }
    }).detach();
  });
}

void unblock_stop_signals() {
  const sigset_t set = stop_signals();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace attnlab::nmt
