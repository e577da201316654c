#pragma once
// Philox-4x32-10 lives in the public attnlab/philox.h (plugins draw dropout masks with it).
#include "attnlab/philox.h"
