int product(const int *xs, int n);
int sum(const int *xs, int n);
