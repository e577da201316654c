#pragma once
// A 64-bit seed kept in the memory of a device, for kernels that read their dropout seed when they
// run (philox::SeedRef) instead of taking it as an argument. A captured CUDA graph replays its
// kernels with the arguments of the capture; with the seed in a slot, writing the slot before a
// replay gives the replay that batch's masks.
#include <cstdint>

#include "attnlab/device.h"
#include "attnlab/philox.h"
#include "attnlab/tensor.h"

namespace attnlab {

class SeedSlot {
 public:
  // A slot on `device`, holding 0.
  explicit SeedSlot(Device device);

  // Sets the slot to `seed` in order with the work queued on its device: kernels queued before
  // read the old seed, kernels queued after the new one. The host does not wait for the device
  // (on a CUDA device it is an 8-byte upload on the device's stream); it must not be called
  // while a CUDA graph is being captured.
  void write(std::uint64_t seed);

  Device device() const { return storage_.device(); }
  // The slot's address in the device's memory (the host's for the CPU); valid while the slot lives.
  const std::uint64_t* address() const;
  // The seed that work queued now will read. Downloads the slot (a host wait on a CUDA device):
  // for tests and checks, not for a training step.
  std::uint64_t read() const;

 private:
  Tensor storage_;  // i64[1], the seed's bits
};

}  // namespace attnlab
