/* allreduce: every rank contributes rank+1; rank 0 prints the sum and the
 * world size, e.g. "sum=10 size=4" for 4 ranks. Used by atom's MPI tests. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size, v, sum;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	v = rank + 1;
	MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("sum=%d size=%d\n", sum, size);
	MPI_Finalize();
	return 0;
}
