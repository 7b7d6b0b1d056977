int is_multiple(int n, int k);
int is_even(int n);
