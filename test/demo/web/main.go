// Command atom-demo-web is the demo's service: a tiny HTTP server that
// answers every request with the job, task and replica serving it. Run
// under atom as one replica of a service, it listens on 127.0.0.1 at
// $PORT_BASE + $ATOM_REPLICA, so each replica of a service on one machine
// has its own port, and logs the URL it serves.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	base, err := strconv.Atoi(os.Getenv("PORT_BASE"))
	if err != nil || base <= 0 {
		log.Fatalf("PORT_BASE %q is not a port: set it in the service's env", os.Getenv("PORT_BASE"))
	}
	replica, err := strconv.Atoi(os.Getenv("ATOM_REPLICA"))
	if err != nil {
		log.Fatalf("ATOM_REPLICA %q is not a replica index: run me under atom", os.Getenv("ATOM_REPLICA"))
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(base+replica))
	body := fmt.Sprintf("hello from job %s, task %s, replica %d of %s, node %s\n",
		os.Getenv("ATOM_JOB_ID"), os.Getenv("ATOM_TASK_ID"), replica, os.Getenv("ATOM_REPLICAS"), os.Getenv("ATOM_NODE"))
	srv := &http.Server{
		Addr:              addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, body)
		}),
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving http://%s/\n", addr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	fmt.Println("stopped")
}
