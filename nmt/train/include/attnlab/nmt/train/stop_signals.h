#pragma once
// Cooperative interruption: after request_stop(), or Ctrl-C (SIGINT) or SIGTERM once
// install_stop_signal_handlers() has run, the trainer finishes its step, writes a checkpoint and
// returns with interrupted = true; a suite starts no further row.

namespace attnlab::nmt {

void request_stop();
// Whether a stop was requested (by request_stop or a signal) and not yet cleared.
bool stop_requested();
// Clears the request (train() does, when its loop starts).
void clear_stop_request();

// Makes SIGINT and SIGTERM requests to stop. One thread waits for them (sigwait); every thread
// this process starts afterwards (OpenMP's, oneDNN's, MPI's) has them blocked, so that no signal
// handler ever runs on a compute thread: oneDNN's JIT GEMM kernels (Debian 12's oneDNN 2.6; fixed
// upstream in 3.11) point the stack pointer into the heap while they run, and a handler's frame
// written there corrupts the heap. Call it before the first parallel region. A second call does
// nothing.
void install_stop_signal_handlers();
// The name of the thread that waits for them (in /proc/PID/task/*/comm).
inline constexpr char kStopSignalThread[] = "attnlab-signals";
// Unblocks SIGINT and SIGTERM in the calling thread: for a child between fork and exec (the mask
// is inherited across both). Async-signal-safe.
void unblock_stop_signals();

}  // namespace attnlab::nmt
