// The public header alone compiles as C++.
#include "../../dataflow.h"
int main() { df_status st = {DF_OK, ""}; return st.code == DF_OK && df_dtype_size(DF_INT64) == 8 ? 0 : 1; }
