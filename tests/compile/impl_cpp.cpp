// The implementation pulled in from C++ (one translation unit) must stop at one #error that says
// to compile dataflow.c as C; build.sh checks that it fails that way.
#define DATAFLOW_IMPLEMENTATION
#include "../../dataflow.h"
int main() { return 0; }
