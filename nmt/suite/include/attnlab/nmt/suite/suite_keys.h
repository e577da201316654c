#pragma once
// Every key of a suite file's own tables ([suite], [suite.slurm], [search], [vars], [rows.NAME],
// [grids.NAME]; `attnlab config --keys`, docs/keys.md), made like the experiment's keys
// (attnlab/nmt/experiment/experiment_keys.h): by loading a probe suite that holds every table with
// the reader's key log on, beside one catalog of meanings that must name exactly those keys. A
// suite's [base] and its rows' dotted keys are the experiment's.
#include <vector>

#include "attnlab/nmt/experiment/experiment_keys.h"

namespace attnlab::nmt {

std::vector<ExperimentKey> suite_keys();

}  // namespace attnlab::nmt
