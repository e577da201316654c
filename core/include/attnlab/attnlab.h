#pragma once
// The attnlab core in one include.
#include "attnlab/autograd.h"
#include "attnlab/device.h"
#include "attnlab/dtype.h"
#include "attnlab/error.h"
#include "attnlab/ops.h"
#include "attnlab/random.h"
#include "attnlab/seed_slot.h"
#include "attnlab/shape.h"
#include "attnlab/tensor.h"
#include "attnlab/threads.h"
#include "attnlab/version.h"
