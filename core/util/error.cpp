#include "core/util/error.h"
