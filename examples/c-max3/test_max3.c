#include <string.h>
#include "max3.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "min") == 0) return (min3(4, 2, 7) == 2) ? 0 : 1;
    if (strcmp(argv[1], "first") == 0) return (max3(9, 1, 2) == 9) ? 0 : 1;
    if (strcmp(argv[1], "second") == 0) return (max3(1, 9, 2) == 9) ? 0 : 1;
    if (strcmp(argv[1], "third") == 0) return (max3(1, 2, 9) == 9) ? 0 : 1;
    return 2;
}
