#include <string.h>
#include "even.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "multiple") == 0) return (is_multiple(9, 3) == 1) ? 0 : 1;
    if (strcmp(argv[1], "four") == 0) return (is_even(4) == 1) ? 0 : 1;
    if (strcmp(argv[1], "seven") == 0) return (is_even(7) == 0) ? 0 : 1;
    return 2;
}
