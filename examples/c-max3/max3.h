int min3(int a, int b, int c);
int max3(int a, int b, int c);
