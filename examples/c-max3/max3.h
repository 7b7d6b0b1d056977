int max3(int a, int b, int c);
