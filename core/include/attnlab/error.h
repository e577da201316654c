#pragma once
// Errors thrown by attnlab. Every message names the operation and the offending values, so that
// a wrong shape or device is understood without a debugger.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace attnlab {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a tensor lives on a device this build or this machine cannot serve.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// Thrown when a device (or the host) cannot give the memory a tensor needs. The message names the
// size, what the allocator held and had cached, and what to lower (training.batch_tokens).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_error(std::string message);

}  // namespace attnlab

// ATTNLAB_CHECK(cond, "fmt {}", args...) throws attnlab::Error with the formatted message.
#define ATTNLAB_CHECK(cond, ...)                                   \
  do {                                                             \
    if (!(cond)) ::attnlab::throw_error(fmt::format(__VA_ARGS__)); \
  } while (0)
