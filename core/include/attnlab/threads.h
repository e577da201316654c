#pragma once
// Thread count of the CPU backend (OpenMP kernels and OpenBLAS share it).

namespace attnlab {

int num_threads();
// Sets the thread count of our kernels and of OpenBLAS; n >= 1.
void set_num_threads(int n);

}  // namespace attnlab
