#include <string.h>
#include "sum.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "product") == 0) return (product((int[]){2, 3, 4}, 3) == 24) ? 0 : 1;
    if (strcmp(argv[1], "empty") == 0) return (sum(0, 0) == 0) ? 0 : 1;
    if (strcmp(argv[1], "three") == 0) return (sum((int[]){1, 2, 3}, 3) == 6) ? 0 : 1;
    return 2;
}
