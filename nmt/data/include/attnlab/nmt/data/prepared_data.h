#pragma once
// The data an experiment trains on, ready for batching: the synthetic corpus written when the
// experiment asks for it, the training pairs read and length-filtered, the shared SentencePiece
// vocabulary trained (or loaded from the cache), the corpora encoded (or loaded from the cache).
#include <functional>
#include <memory>
#include <string>

#include "attnlab/nmt/data/encoded.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/data/vocabulary.h"

namespace attnlab::nmt {

struct PreparedData {
  Vocabulary vocab;
  std::shared_ptr<const EncodedCorpus> train;
  std::shared_ptr<const EncodedCorpus> dev;  // null when the experiment has no dev set
  std::string train_source, train_target, dev_source, dev_target, test_source, test_target;
};

// `log` receives one line per step taken ("vocabulary: trained ...", "train: kept ...").
PreparedData prepare_data(const ExperimentConfig& config, const std::function<void(const std::string&)>& log);

// Where the synthetic corpus of an experiment lives (under the cache folder).
std::string synthetic_corpus_dir(const ExperimentConfig& config);

}  // namespace attnlab::nmt
