#include "absval.h"

int absval(int x) {
    return x < 0 ? x : -x;
}
