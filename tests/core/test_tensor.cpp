#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;

TEST_CASE("dtype and device name tables round-trip") {
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    const auto d = static_cast<DType>(i);
    CHECK(dtype_from_name(dtype_name(d)) == d);
  }
  CHECK_THROWS_WITH_AS(dtype_from_name("f16"), doctest::Contains("valid: f32, f64, bf16"), Error);
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::parse("cuda:3").str() == "cuda:3");
  CHECK_THROWS_WITH_AS(Device::parse("gpu"), doctest::Contains("invalid device 'gpu'"), Error);
  CHECK_THROWS_AS(Device::parse("cuda:x"), Error);
}

TEST_CASE("bf16 rounds to nearest even and keeps specials") {
  CHECK(static_cast<float>(bf16(1.0f)) == 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  CHECK(static_cast<float>(bf16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(static_cast<float>(bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
  CHECK(std::isinf(static_cast<float>(bf16(INFINITY))));
  CHECK(std::isnan(static_cast<float>(bf16(NAN))));
}

TEST_CASE("tensor creation conversion and views") {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.numel() == 6);
  CHECK(t.str() == "f32[2, 3] on cpu");
  CHECK(Tensor::zeros({4}).to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(Tensor::full({2}, 7, DType::i32).to_vector<std::int32_t>() == std::vector<std::int32_t>{7, 7});

  Tensor v = t.reshape({3, -1});
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.same_storage(t));
  CHECK_THROWS_WITH_AS(t.reshape({4, 2}), doctest::Contains("6 elements cannot become 8"), Error);

  Tensor b = t.to(DType::bf16);
  CHECK(b.dtype() == DType::bf16);
  CHECK(b.to(DType::f32).to_vector<float>() == t.to_vector<float>());
  CHECK(t.to(DType::i64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});

  Tensor c = t.clone();
  CHECK_FALSE(c.same_storage(t));
  CHECK(c.to_vector<float>() == t.to_vector<float>());
  CHECK(Tensor::full({1}, 2.5).item() == 2.5);
  CHECK_THROWS_WITH_AS(t.item(), doctest::Contains("one-element"), Error);
  CHECK_THROWS_WITH_AS(t.data<double>(), doctest::Contains("data<f64>() on a f32[2, 3]"), Error);
  CHECK_THROWS_WITH_AS(Tensor::from_vector<float>({2, 2}, {1, 2, 3}),
                       doctest::Contains("3 values for shape [2, 2]"), Error);
}

TEST_CASE("storage returns to its allocator") {
  Allocator& cpu = allocator_for(Device::cpu());
  const auto before = cpu.bytes_in_use();
  {
    Tensor t = Tensor::empty({1024}, DType::f64);
    CHECK(cpu.bytes_in_use() == before + 8192);
    Tensor view = t.reshape({32, 32});
  }
  CHECK(cpu.bytes_in_use() == before);
}

TEST_CASE("CUDA tensors give a clear error without CUDA and round-trip with it") {
  if (!cuda_built()) {
    CHECK_THROWS_WITH_AS(Tensor::zeros({2}, DType::f32, Device::cuda(0)),
                         doctest::Contains("built without CUDA"), DeviceError);
    CHECK_THROWS_WITH_AS(Tensor::zeros({2}).to(Device::cuda(0)),
                         doctest::Contains("built without CUDA"), DeviceError);
    CHECK(cuda_device_count() == 0);
    return;
  }
  if (cuda_device_count() == 0) {
    MESSAGE("CUDA is built in but no GPU is visible: round trip skipped");
    CHECK_THROWS_WITH_AS(Tensor::zeros({2}, DType::f32, Device::cuda(0)),
                         doctest::Contains("0 CUDA device(s)"), Error);
    return;
  }
  Tensor host = testing::random_tensor({3, 5}, 7);
  Tensor back = host.to(Device::cuda(0)).to(Device::cpu());
  CHECK(back.to_vector<float>() == host.to_vector<float>());
  CHECK(Tensor::full({3}, 1.5, DType::f32, Device::cuda(0)).to_vector<float>() ==
        std::vector<float>(3, 1.5f));
}

TEST_CASE("the CPU never counts a host wait") {
  // The counters of host_waits are a CUDA device's (tests/cuda/test_cuda_host_waits.cpp): on the
  // CPU, ops, copies and reads of a value leave them at zero.
  Tensor x = testing::random_tensor({8, 8}, 3);
  const double s = sum(mul(x, x)).item();
  CHECK(s > 0);
  synchronize(Device::cpu());
  const HostWaits waits = host_waits(Device::cpu());
  CHECK(waits.synchronizations == 0);
  CHECK(waits.downloads == 0);
  if (!cuda_built())
    CHECK_THROWS_WITH_AS(host_waits(Device::cuda(0)), doctest::Contains("built without CUDA"), DeviceError);
}
