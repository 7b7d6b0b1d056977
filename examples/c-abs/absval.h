int square(int x);
int absval(int x);
