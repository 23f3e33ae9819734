package daemon

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/atom-sched/atom/coordinator/server"
)

// headerForwarded marks a join a follower passed on to the leader: the
// leader does not pass it on again (leadership may have moved meanwhile;
// the joining server asks again).
const headerForwarded = "Atom-Forwarded-By"

// serveJoin adds the caller as a voter. A follower forwards the join to
// the leader (as it forwards other writes), so a new server may be
// pointed at any server of the cluster.
func (f *forwarder) serveJoin(w http.ResponseWriter, r *http.Request) {
	var req struct{ ID, RaftAddr string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil || req.ID == "" || req.RaftAddr == "" {
		http.Error(w, `{"error":"join needs {ID, RaftAddr}"}`, http.StatusBadRequest)
		return
	}
	err := f.srv.AddVoter(req.ID, req.RaftAddr)
	var nl *server.NotLeaderError
	if err == nil || !errors.As(err, &nl) || nl.LeaderID == "" || r.Header.Get(headerForwarded) != "" {
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	url, ok := f.peers[nl.LeaderID]
	if !ok {
		http.Error(w, fmt.Sprintf("%s: this server has no --peer for %s, so it cannot pass the join on: join via the leader's URL, or give this server --peer %s=URL", nl, nl.LeaderID, nl.LeaderID), http.StatusServiceUnavailable)
		return
	}
	body, _ := json.Marshal(req)
	fwd, err := http.NewRequestWithContext(r.Context(), http.MethodPost, url+pathJoin, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fwd.Header.Set("Authorization", "Bearer "+f.secret)
	fwd.Header.Set(headerForwarded, f.srv.ID())
	resp, err := f.client.Do(fwd)
	if err != nil {
		http.Error(w, fmt.Sprintf("forward the join to leader %s at %s: %v", nl.LeaderID, url, err), http.StatusServiceUnavailable)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		// The joining server must not take the leader's refusal of this
		// server (a 401) for its own: only a 503 goes back as it is.
		http.Error(w, fmt.Sprintf("forward the join to leader %s at %s: %s: %s", nl.LeaderID, url, resp.Status, bytes.TrimSpace(b)), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// joinRefused is a join error that asking again cannot fix: the server's
// certificates or secret are not the cluster's (server.Config.JoinFunc).
type joinRefused struct{ msg string }

func (e *joinRefused) Error() string   { return e.msg }
func (e *joinRefused) Permanent() bool { return true }

// join asks the server at base (an HTTP URL) to add this one as a voter.
// tls says whether this server runs with TLS (for the advice given).
func join(client *http.Client, secret string, tls bool) func(ctx context.Context, base, id, raftAddr string) error {
	return func(ctx context.Context, base, id, raftAddr string) error {
		body, _ := json.Marshal(map[string]string{"ID": id, "RaftAddr": raftAddr})
		err := postOK(ctx, client, base+pathJoin, secret, body)
		if err == nil || ctx.Err() != nil {
			return err
		}
		return classifyJoin(base, err, tls)
	}
}

// certAdvice is what a server with certificates from another CA, or none,
// is told to do.
const certAdvice = "start this server with --tls-cert, --tls-key and --tls-ca: a certificate for its own address signed by the cluster's CA, and that CA"

// classifyJoin turns the errors of a join that asking again cannot fix
// into a *joinRefused that says what to change; others (connection
// refused, 503 while no leader is elected) are returned as they are.
func classifyJoin(base string, err error, tls bool) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var se *statusErr
	msg := err.Error()
	switch {
	case errors.As(err, &unknown) && !tls:
		return &joinRefused{fmt.Sprintf("join %s: it serves HTTPS with a certificate this server cannot verify (%v), and this server runs without TLS: %s", base, err, certAdvice)}
	case errors.As(err, &unknown):
		return &joinRefused{fmt.Sprintf("join %s: its certificate is not signed by the CA in this server's --tls-ca (%v): %s", base, err, certAdvice)}
	case errors.As(err, &host):
		return &joinRefused{fmt.Sprintf("join %s: its certificate does not name the host of that URL (%v): join it by a name or IP its certificate lists, or reissue its certificate for this one", base, err)}
	case errors.As(err, &invalid):
		return &joinRefused{fmt.Sprintf("join %s: its certificate is not valid (%v): renew the certificate (or check the clocks)", base, err)}
	case strings.Contains(msg, "remote error: tls:"):
		return &joinRefused{fmt.Sprintf("join %s: it refused this server's certificate (%v): %s", base, err, certAdvice)}
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return &joinRefused{fmt.Sprintf("join %s: it serves plain HTTP, this server TLS: give every server of the cluster the same TLS settings (or none), and join with http:// only a cluster without TLS", base)}
	case errors.As(err, &se) && se.status == http.StatusBadRequest && strings.Contains(se.body, "HTTP request to an HTTPS server"):
		return &joinRefused{fmt.Sprintf("join %s: it serves HTTPS: join it with an https:// URL and %s", base, certAdvice)}
	case errors.As(err, &se) && (se.status == http.StatusUnauthorized || se.status == http.StatusForbidden):
		why := se.body
		var e struct{ Error string }
		if json.Unmarshal([]byte(se.body), &e) == nil && e.Error != "" {
			why = e.Error
		}
		if strings.Contains(why, "certificate") {
			return &joinRefused{fmt.Sprintf("join %s: refused (%s): %s", base, strings.TrimSpace(why), certAdvice)}
		}
		return &joinRefused{fmt.Sprintf("join %s: refused (%s): the shared secret does not match: give this server the cluster's --secret (or $ATOM_CLUSTER_SECRET)", base, strings.TrimSpace(why))}
	}
	return err
}

// JoinFailed delivers the error that ended joining for good: this server
// cannot become part of the cluster until its settings change (see
// server.Server.JoinFailed). `coordinator server` exits with it.
func (d *Daemon) JoinFailed() <-chan error { return d.Server.JoinFailed() }
