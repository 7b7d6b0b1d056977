#include "absval.h"

int square(int x) {
    return x * x;
}

int absval(int x) {
    return x < 0 ? x : -x;
}
