// Command chaos is `make chaos`: atom's fault and load suite (package
// test/chaos) for a bounded time, its figures printed as key=value lines.
// It exits 1 if any promise broke, 2 if the suite could not run.
//
//	chaos --bin bin --duration 3m [--seed N] [--work DIR] [--quiet]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/atom-sched/atom/test/chaos"
)

func main() {
	var o chaos.Options
	quiet := flag.Bool("quiet", false, "print only the figures, not the fault log")
	flag.StringVar(&o.Bin, "bin", "bin", "directory holding the coordinator and atom binaries")
	flag.StringVar(&o.Work, "work", "", "work directory: data dirs, server logs, specs (default: a new temporary one)")
	flag.DurationVar(&o.Duration, "duration", 3*time.Minute, "how long faults and load go on")
	flag.Uint64Var(&o.Seed, "seed", 0, "seed of the workload's and the faults' choices (default: random)")
	flag.IntVar(&o.Clients, "clients", 4, "concurrent clients")
	flag.Parse()
	if !*quiet {
		o.Log = os.Stderr
	} else {
		o.Log = io.Discard
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	for _, l := range rep.Lines() {
		fmt.Println(l)
	}
	if f := rep.Failures(); len(f) > 0 {
		fmt.Fprintf(os.Stderr, "chaos: %d promises broke (work dir %s):\n", len(f), rep.Work)
		for _, l := range f {
			fmt.Fprintln(os.Stderr, "  "+l)
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "chaos: every promise held (work dir %s)\n", rep.Work)
}
