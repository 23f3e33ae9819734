// Command demo is `make demo`: atom's main job on three coordinator
// servers and a local cluster of simulated nodes, narrated step by step
// (see package test/demo). It exits 1 naming the step that did not happen
// as narrated, 2 on bad usage; Ctrl-C stops it and everything it started.
//
//	go run ./test/demo/cmd/demo [--bin bin] [--work DIR] [--keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/atom-sched/atom/test/demo"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding coordinator, atom and atom-demo-web")
	work := flag.String("work", "", "work directory for specs, server data and logs (default: a new temporary directory)")
	keep := flag.Bool("keep", false, "keep the work directory (it is kept anyway when the demo fails)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: demo [--bin DIR] [--work DIR] [--keep]")
		os.Exit(2)
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "atom-demo-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			os.Exit(1)
		}
		dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := demo.Run(ctx, demo.Config{BinDir: *bin, WorkDir: dir, Out: os.Stdout})
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\ndemo: specs, server logs and task output are in %s\n", err, dir)
		os.Exit(1)
	}
	if *keep || *work != "" {
		fmt.Printf("specs, server logs and task output are in %s\n", dir)
		return
	}
	_ = os.RemoveAll(dir)
}
