#include <cudnn.h>

int main() { return cudnnGetVersion() >= 90000 ? 0 : 1; }
