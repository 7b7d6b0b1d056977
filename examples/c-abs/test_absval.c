#include <string.h>
#include "absval.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "square") == 0) return (square(-3) == 9) ? 0 : 1;
    if (strcmp(argv[1], "zero") == 0) return (absval(0) == 0) ? 0 : 1;
    if (strcmp(argv[1], "negative") == 0) return (absval(-4) == 4) ? 0 : 1;
    if (strcmp(argv[1], "positive") == 0) return (absval(5) == 5) ? 0 : 1;
    return 2;
}
