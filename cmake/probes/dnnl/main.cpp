#include <oneapi/dnnl/dnnl.h>

int main() { return dnnl_version()->major > 0 ? 0 : 1; }
