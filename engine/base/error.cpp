#include "engine/base/error.h"

// Error types are header-only today; this translation unit anchors the vtables.
