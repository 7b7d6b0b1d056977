#include "even.h"

int is_even(int n) {
    return n % 2 == 1;
}
