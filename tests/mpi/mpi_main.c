/* The MPI transport: `mpirun -np 4 build/mpi_test`. Rank 0 runs a while loop whose body spans
   the three worker ranks, forward and gradient, through MPI, and compares with one process.
   Exit 0: equal. */
#include "../net/span_loop.h"

int main(int argc, char **argv) {
    const char *target = NULL;
    df_status st;
    if (df_mpi_init(&argc, &argv, &target, &st) != DF_OK) { fprintf(stderr, "mpi_test: %s\n", st.message); return 2; }
    int bad = span_loop_check("mpi_test", target);    /* (only rank 0 gets here) */
    df_mpi_finalize();
    return bad;
}
