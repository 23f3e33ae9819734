package report

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// MaxExchangeWait bounds the wait between two tries of ExchangeToken.
const MaxExchangeWait = 5 * time.Second

// ExchangeToken gets task's allocation token, and the environment its
// Pod does not carry, from the coordinator (addrs
// as for New) for the service-account token in file (ATOM_TOKEN_FILE: the
// projected token of a kubernetes Pod, which the kubelet renews, so it is
// read again for every try). A coordinator that is away (no answer, 429,
// 5xx) is tried again, server after server, with backoff up to
// MaxExchangeWait, until ctx ends; a refusal (any other 4xx) is returned
// at once, with the coordinator's message.
func ExchangeToken(ctx context.Context, addrs string, task structs.TaskID, file string, log *slog.Logger) (wire.TaskToken, error) {
	r := New(addrs, task, "", maxRequestTimeout, log) // each try bounded by 10 s
	// The coordinator answers once per allocation, and again only to
	// this nonce: a retry after a lost answer gets the token, a process
	// of the job that reads the same token file does not.
	nb := make([]byte, 32)
	if _, err := rand.Read(nb); err != nil {
		return wire.TaskToken{}, fmt.Errorf("make a nonce: %w", err)
	}
	nonce := hex.EncodeToString(nb)
	for n := 1; ; n++ {
		b, err := os.ReadFile(file)
		if err != nil {
			return wire.TaskToken{}, fmt.Errorf("read the Pod's service-account token: %w", err)
		}
		jwt := strings.TrimSpace(string(b))
		if jwt == "" {
			return wire.TaskToken{}, fmt.Errorf("the Pod's service-account token file %s is empty", file)
		}
		tok, err := r.client.TaskToken(ctx, task, jwt, nonce)
		var ce *client.Error
		switch {
		case err == nil && tok.Token != "":
			return tok, nil
		case err == nil:
			return wire.TaskToken{}, fmt.Errorf("coordinator %s answered no allocation token for task %s", r.client.Addr(), task)
		case ctx.Err() != nil:
			return wire.TaskToken{}, fmt.Errorf("gave up waiting for the coordinator (%v): %w", ctx.Err(), err)
		case errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 && ce.Status != http.StatusTooManyRequests:
			return wire.TaskToken{}, fmt.Errorf("the coordinator refused this Pod's service-account token (%d): %w", ce.Status, err)
		}
		log.Warn("token exchange failed; trying again", "task", task, "tries", n, "coordinator", r.client.Addr(), "err", err)
		r.next()
		t := time.NewTimer(min(client.DefaultBackoff(n), MaxExchangeWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return wire.TaskToken{}, fmt.Errorf("gave up waiting for the coordinator (%v): %w", ctx.Err(), err)
		case <-t.C:
		}
	}
}
