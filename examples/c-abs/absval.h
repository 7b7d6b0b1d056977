int absval(int x);
