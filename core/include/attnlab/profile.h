#pragma once
// Where the time of a training step goes, op by op. With ATTNLAB_PROFILE=1 in the environment (or
// set_enabled(true)):
// - backward: run_backward waits for the device before and after each node's backward and adds
//   the wall time to "bwd <op>", and the sums of gradients that meet at a node to
//   "bwd (gradient accumulation)";
// - forward, after mark(): each differentiable op, when it is recorded on the tape, waits for the
//   device and adds the time since the previous one (or since mark()) to "fwd <op>": its own
//   kernels, plus any untracked work since the op before it.
// Waiting serializes the device, so each total is the op's own time (launches and kernels, not
// overlapped with anything), and a profiled step runs slower than an unprofiled one.
// bench_train_step prints the table (bench/README.md).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::profile {

// Read once from ATTNLAB_PROFILE ("1": on) unless set_enabled() was called.
bool enabled();
void set_enabled(bool on);

// Adds one call of `seconds` to op `op`'s total. Thread-safe.
void add(std::string_view op, double seconds);

// Starts the forward clock of this thread: the caller has drained the device (synchronize()).
// run_backward stops it.
void mark();
// Called by the autograd tape for each op recorded (after its device is drained): adds the time
// since mark() or the previous op to "fwd <op>" when the clock runs.
void forward_op(std::string_view op);
// True when the forward clock of this thread runs.
bool marked();
void unmark();

struct Entry {
  std::string op;
  std::int64_t calls = 0;
  double seconds = 0;
};
// Every op seen since the last reset(), the largest total first.
std::vector<Entry> entries();
void reset();

// A Markdown table: op, calls, milliseconds and share of the profiled time (the forward's and the
// backward's rows together, the largest first), each per `per` (the number of steps profiled).
std::string table(double per = 1.0);

}  // namespace attnlab::profile
