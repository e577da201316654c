#pragma once
// The safetensors format (https://huggingface.co/docs/safetensors), exactly as specified:
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   JSON header: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//             ..., "__metadata__": {"<key>": "<string value>"}}, padded with spaces so that
//             8 + N is a multiple of 8
//   rest      the data section: each tensor's raw little-endian row-major bytes at [b, e)
//             (offsets relative to the start of the data section), no gaps, no overlaps.
// Supported dtypes: F32, F64, BF16, I32, I64, U8 (the attnlab dtypes f32 ... u8).
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::nmt {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct SafetensorsContent {
  std::vector<NamedTensor> tensors;  // in data-section order (the order they were written in)
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const Tensor* find(std::string_view name) const;
};

// "F32", "BF16", ... for an attnlab dtype, and back (throws attnlab::Error for an unknown name).
std::string_view safetensors_dtype_name(DType dtype);
DType dtype_from_safetensors_name(std::string_view name);

// Writes the tensors in the given order (device tensors are copied to the host one at a time)
// and the metadata, atomically (write_file_atomically). Throws attnlab::Error for an undefined
// tensor, an empty or duplicate name, or the reserved name "__metadata__".
void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and validates a whole file: header length within the file, JSON, every dtype known,
// shapes, offsets in range, contiguous and non-overlapping, numel * dtype size == byte length,
// data section length == file size - 8 - N. Tensors are CPU tensors. Throws attnlab::Error
// starting with `label` (default: "safetensors file '<path>'") and saying what is wrong;
// never returns a partial result.
SafetensorsContent read_safetensors(const std::filesystem::path& path, std::string label = {});

}  // namespace attnlab::nmt
