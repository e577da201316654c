#pragma once
// The dispatch macros live in the public attnlab/dispatch.h, which plugins with CUDA kernels use too.
#include "attnlab/dispatch.h"
