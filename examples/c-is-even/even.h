int is_even(int n);
