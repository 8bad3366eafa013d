// cuforge CPU backend: everything is in <cooperative_groups.h>
#pragma once
#include "../cooperative_groups.h"
