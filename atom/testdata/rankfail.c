/* rankfail RANK HOW N: rank RANK fails, the others wait for it in a barrier.
 * HOW is "exit" (exit code N), "signal" (kill itself with signal N) or
 * "abort" (MPI_Abort with error code N). Used by the MPI failure tests. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	int rank, bad, n;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc != 4) {
		fprintf(stderr, "usage: rankfail RANK exit|signal|abort N\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	bad = atoi(argv[1]);
	n = atoi(argv[3]);
	if (rank == bad) {
		fprintf(stderr, "rank %d fails: %s %d\n", rank, argv[2], n);
		fflush(stderr);
		if (strcmp(argv[2], "signal") == 0)
			raise(n);
		else if (strcmp(argv[2], "abort") == 0)
			MPI_Abort(MPI_COMM_WORLD, n);
		exit(n);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
