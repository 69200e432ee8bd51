/* The public header alone compiles as C (checked as C99 and C11 by build.sh). */
#include "../../dataflow.h"
int main(void) { return df_dtype_size(DF_FLOAT) == 4 ? 0 : 1; }
