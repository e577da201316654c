#include <doctest/doctest.h>

#include <cstdlib>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/machine_share.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

std::vector<std::int64_t> threads_of(const MachinePlan& p) {
  std::vector<std::int64_t> t;
  for (const JobSlot& s : p.slots) t.push_back(s.threads);
  return t;
}

std::vector<std::vector<int>> gpus_of(const MachinePlan& p) {
  std::vector<std::vector<int>> g;
  for (const JobSlot& s : p.slots) g.push_back(s.gpus);
  return g;
}

}  // namespace

TEST_CASE("the cores are divided among the job slots, the remainder to the first ones") {
  CHECK(threads_of(divide_machine(2, 0, 2, 1)) == std::vector<std::int64_t>{1, 1});
  CHECK(threads_of(divide_machine(64, 0, 8, 1)) == std::vector<std::int64_t>(8, 8));
  CHECK(threads_of(divide_machine(7, 0, 2, 1)) == std::vector<std::int64_t>{4, 3});
  CHECK(threads_of(divide_machine(10, 0, 4, 1)) == std::vector<std::int64_t>{3, 3, 2, 2});
  // More jobs than cores: one thread each (the rows then share cores, as the user asked).
  CHECK(threads_of(divide_machine(2, 0, 3, 1)) == std::vector<std::int64_t>{1, 1, 1});
  // One job: the whole machine; --threads-per-row replaces the share.
  CHECK(threads_of(divide_machine(16, 0, 1, 1)) == std::vector<std::int64_t>{16});
  CHECK(threads_of(divide_machine(2, 0, 2, 1, 2)) == std::vector<std::int64_t>{2, 2});
  CHECK_THROWS_AS(divide_machine(0, 0, 1, 1), Error);
  CHECK_THROWS_AS(divide_machine(4, 0, 0, 1), Error);
}

TEST_CASE("each job slot gets GPUs of its own, shared round-robin when slots outnumber them") {
  const MachinePlan eight = divide_machine(64, 8, 4, 2);
  CHECK(gpus_of(eight) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK_FALSE(eight.gpus_shared);
  const MachinePlan one_each = divide_machine(16, 4, 4, 1);
  CHECK(gpus_of(one_each) == std::vector<std::vector<int>>{{0}, {1}, {2}, {3}});
  CHECK_FALSE(one_each.gpus_shared);
  const MachinePlan three_on_two = divide_machine(16, 2, 3, 1);
  CHECK(gpus_of(three_on_two) == std::vector<std::vector<int>>{{0}, {1}, {0}});
  CHECK(three_on_two.gpus_shared);
  CHECK(three_on_two.describe().find("share them round-robin") != std::string::npos);
  // Asking for more GPUs per row than the node has: every row gets all of them, shared.
  const MachinePlan too_many = divide_machine(16, 2, 2, 4);
  CHECK(gpus_of(too_many) == std::vector<std::vector<int>>{{0, 1}, {0, 1}});
  CHECK(too_many.gpus_shared);
  CHECK(gpus_of(divide_machine(2, 0, 2, 1)) == std::vector<std::vector<int>>{{}, {}});
  CHECK(divide_machine(2, 0, 2, 1).describe() ==
        "2 row(s) at once on 2 core(s): 1 thread(s) per row that leaves threads at 0; no GPU");
}

TEST_CASE("a row in a slot keeps its own threads and device, or takes the slot's") {
  ExperimentConfig cpu;
  cpu.device = "cpu";
  const MachinePlan plan = divide_machine(8, 4, 2, 1);
  RowResources r = row_resources(cpu, plan.slots[1]);
  CHECK(r.threads == 4);
  CHECK(r.device == "cpu");
  CHECK(r.visible_gpus.empty());
  cpu.threads = 2;
  CHECK(row_resources(cpu, plan.slots[1]).threads == 2);

  ExperimentConfig gpu;
  gpu.device = "cuda:0";
  r = row_resources(gpu, plan.slots[1]);
  CHECK(r.device == "cuda:1");
  CHECK(r.visible_gpus.empty());

  // Several GPUs per row: CUDA_VISIBLE_DEVICES names them, through the parent's own list.
  const MachinePlan pairs = divide_machine(8, 4, 2, 2);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  r = row_resources(gpu, pairs.slots[1]);
  CHECK(r.device == "cuda:0");
  CHECK(r.visible_gpus == "2,3");
  ::setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7", 1);
  CHECK(row_resources(gpu, pairs.slots[1]).visible_gpus == "6,7");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}
