#include "even.h"

int is_multiple(int n, int k) {
    return n % k == 0;
}

int is_even(int n) {
    return n % 2 == 1;
}
