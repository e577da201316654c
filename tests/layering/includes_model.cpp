// Compiled by tests/CMakeLists.txt against two libraries: attnlab_nmt_model, where it must build,
// and attnlab_nmt_metrics, where it must not (metrics know nothing of models: nmt/README.md).
#include "attnlab/nmt/model/transformer.h"

int layering_probe_model() { return static_cast<int>(sizeof(attnlab::nmt::DecoderState)); }
