#include "runtime/core/runtime_error.h"
