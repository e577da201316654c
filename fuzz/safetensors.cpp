// Fuzzes the safetensors reader (a path: the input is written to <scratch>/input.safetensors). A
// file it accepts must hold tensors whose bytes are all there: every byte is read back.
#include <cstdlib>

#include "attnlab/nmt/checkpoint/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnlab;
  const auto path = fuzz::write_input("input.safetensors", fuzz::as_text(data, size));
  fuzz::expect_errors([&] {
    const nmt::SafetensorsContent content = nmt::read_safetensors(path);
    std::size_t total = 0;
    for (const auto& [name, tensor] : content.tensors) {
      const std::size_t bytes = tensor.nbytes();
      const auto* p = static_cast<const unsigned char*>(tensor.raw_data());
      unsigned sum = 0;
      for (std::size_t i = 0; i < bytes; ++i) sum += p[i];  // ASan checks every byte is in bounds
      (void)sum;
      total += bytes;
      if (content.find(name) == nullptr) std::abort();
    }
    if (total > size) std::abort();  // tensors cannot hold more than the file
  });
  return 0;
}
