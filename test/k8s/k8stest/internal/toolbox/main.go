// Command toolbox is the one program of k8stest.ToolboxImage, the image
// the harness imports into its real node for tests: each argument is a
// step, run in order.
//
//	print:TEXT       TEXT and a newline on stdout
//	stderr:TEXT      TEXT and a newline on stderr
//	count:N:DELAY    "line 1" ... "line N" on stdout, DELAY (a Go duration) apart
//	sleep:DELAY      sleep
//	env:NAME         the value of environment variable NAME on stdout
//	cat:PATH         the file PATH on stdout
//	http:PORT        serve "toolbox\n" over HTTP on PORT (all addresses), in the background
//	wait             until SIGTERM or SIGINT, then print "signal SIG" and exit 0
//	exit:CODE        exit with CODE
//
// With no arguments it waits. A bad step exits 2 saying why.
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	steps := os.Args[1:]
	if len(steps) == 0 {
		steps = []string{"wait"}
	}
	for _, s := range steps {
		if err := run(s); err != nil {
			fmt.Fprintf(os.Stderr, "toolbox: step %q: %v\n", s, err)
			os.Exit(2)
		}
	}
}

func run(step string) error {
	name, arg, _ := strings.Cut(step, ":")
	switch name {
	case "print":
		fmt.Println(arg)
	case "stderr":
		fmt.Fprintln(os.Stderr, arg)
	case "count":
		ns, ds, _ := strings.Cut(arg, ":")
		n, err := strconv.Atoi(ns)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(ds)
		if err != nil {
			return err
		}
		for i := 1; i <= n; i++ {
			if i > 1 {
				time.Sleep(d)
			}
			fmt.Printf("line %d\n", i)
		}
	case "sleep":
		d, err := time.ParseDuration(arg)
		if err != nil {
			return err
		}
		time.Sleep(d)
	case "env":
		fmt.Println(os.Getenv(arg))
	case "cat":
		b, err := os.ReadFile(arg)
		if err != nil {
			return err
		}
		os.Stdout.Write(b)
	case "http":
		port, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		go func() {
			err := http.ListenAndServe(fmt.Sprintf(":%d", port), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintln(w, "toolbox")
			}))
			fmt.Fprintf(os.Stderr, "toolbox: http:%d: %v\n", port, err)
			os.Exit(2)
		}()
	case "wait":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		fmt.Printf("signal %v\n", <-sig)
		os.Exit(0)
	case "exit":
		code, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		os.Exit(code)
	default:
		return fmt.Errorf("unknown step %q (print, stderr, count, sleep, env, cat, http, wait, exit)", name)
	}
	return nil
}
