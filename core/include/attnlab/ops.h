#pragma once
// Every core op.
#include "attnlab/ops/activation.h"
#include "attnlab/ops/adam.h"
#include "attnlab/ops/binary.h"
#include "attnlab/ops/cast.h"
#include "attnlab/ops/cross_entropy.h"
#include "attnlab/ops/dropout.h"
#include "attnlab/ops/embedding.h"
#include "attnlab/ops/layer_norm.h"
#include "attnlab/ops/matmul.h"
#include "attnlab/ops/reduce.h"
#include "attnlab/ops/shape_ops.h"
#include "attnlab/ops/softmax.h"
