#include "attnlab/seed_slot.h"

#include <cstring>

#include "cuda/runtime.h"
#include "dispatch.h"

namespace attnlab {

SeedSlot::SeedSlot(Device device) : storage_(Tensor::zeros({1}, DType::i64, device)) {}

void SeedSlot::write(std::uint64_t seed) {
  if (device().is_cpu()) {
    std::memcpy(storage_.raw_data(), &seed, sizeof seed);
    return;
  }
  // An upload from pageable memory: queued on the device's stream, returning once the driver has
  // staged the bytes (runtime.h), so `seed` may go out of scope.
  ATTNLAB_CUDA_ONLY("writing a seed slot",
                    cuda::copy_bytes(storage_.raw_data(), device(), &seed, Device::cpu(), sizeof seed));
}

const std::uint64_t* SeedSlot::address() const {
  return static_cast<const std::uint64_t*>(storage_.raw_data());
}

std::uint64_t SeedSlot::read() const {
  const Tensor host = storage_.to(Device::cpu());
  std::uint64_t seed = 0;
  std::memcpy(&seed, host.raw_data(), sizeof seed);
  return seed;
}

}  // namespace attnlab
