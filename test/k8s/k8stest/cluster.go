package k8stest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities in the API server's token file.
const (
	// AdminUser is in group system:masters: it may do anything.
	AdminUser = "atom-test-admin"
	// CoordinatorNamespace and CoordinatorServiceAccount name the service
	// account the coordinator runs as (deploy/rbac.yaml); CoordinatorUser is
	// the user name the API server sees for it, so RBAC bindings to that
	// service account apply to the Coordinator clients.
	CoordinatorNamespace      = "atom"
	CoordinatorServiceAccount = "atom-coordinator"
	CoordinatorUser           = "system:serviceaccount:" + CoordinatorNamespace + ":" + CoordinatorServiceAccount

	// ServiceAccountIssuer is the issuer of the service-account tokens the
	// API server signs (TokenRequest).
	ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // the `kubernetes` Service
	podCIDR     = "10.0.0.0/16"
)

// Options configure a cluster. The zero value is a good default.
type Options struct {
	// Name labels the cluster in logs, errors and its temporary directory;
	// "k8s" by default ("a" and "b" for StartTwo).
	Name string
	// Timeout bounds start-up; 2 minutes by default.
	Timeout time.Duration
	// EnableAdmissionPlugins and DisableAdmissionPlugins change the API
	// server's default admission plugins (ServiceAccount, Priority,
	// ResourceQuota, TaintNodesByCondition, PodSecurity, ... are on).
	EnableAdmissionPlugins  []string
	DisableAdmissionPlugins []string
	// APIServerArgs and KwokArgs are extra flags (--name=value), passed after
	// the harness's own.
	APIServerArgs []string
	KwokArgs      []string
	// QPS and Burst of the clients the cluster hands out; 1000 and 2000 by
	// default (client-go's own 5 and 10 would throttle the tests).
	QPS   float32
	Burst int
	// Tools replaces FindTools when set.
	Tools *Tools
	// Logf receives progress lines, start-up time included; Start sets it
	// to t.Logf. Nil discards them.
	Logf func(format string, args ...any)
}

// Cluster is one running control plane: etcd, kube-apiserver and kwok.
type Cluster struct {
	Name string
	// Host is the API server's URL (https://127.0.0.1:PORT) and CAData the
	// PEM certificate of the CA that signed its serving certificate.
	Host   string
	CAData []byte
	// AdminToken and CoordinatorToken are bearer tokens of AdminUser and
	// CoordinatorUser; AdminConfig, CoordinatorConfig and the clientsets use
	// them. AdminKubeconfig and CoordinatorKubeconfig are the same as
	// kubeconfig files, for programs a test starts.
	AdminToken, CoordinatorToken           string
	AdminConfig, CoordinatorConfig         *rest.Config
	Admin, Coordinator                     *kubernetes.Clientset
	AdminKubeconfig, CoordinatorKubeconfig string
	// EtcdURL is etcd's client URL.
	EtcdURL string
	// Dir holds certificates, kubeconfigs, logs/ and etcd's data; Close
	// removes it (unless ATOM_K8S_KEEP is set).
	Dir string
	// StartupTime is how long New took.
	StartupTime time.Duration

	opts  Options
	tools Tools
	pki   *pki

	mu     sync.Mutex
	procs  []*proc // in start order; guarded by mu
	kwok   *proc   // the running kwok; guarded by mu
	closed bool    // guarded by mu
}

// Start starts a cluster for t and stops it when t ends. It fails t, saying
// how to get what is missing, when a tool is not installed. The start-up
// time is logged in seconds ("k8s harness up in 4.2s: cluster k8s at ...").
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("start k8s harness: %v", err)
	}
	c.cleanupWith(t)
	return c
}

// StartTwo starts two independent clusters, "a" and "b" unless
// opts.Name is set (then NAME-a and NAME-b), at the same time: for
// multi-cluster tests.
func StartTwo(t testing.TB, opts Options) (*Cluster, *Cluster) {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	start := time.Now()
	var cs [2]*Cluster
	var errs [2]error
	var wg sync.WaitGroup
	for i, suffix := range []string{"a", "b"} {
		o := opts
		o.Name = suffix
		if opts.Name != "" {
			o.Name = opts.Name + "-" + suffix
		}
		wg.Go(func() { cs[i], errs[i] = New(context.Background(), o) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
		t.Fatalf("start k8s harness: %v", err)
	}
	cs[0].cleanupWith(t)
	cs[1].cleanupWith(t)
	opts.Logf("k8s harness up in %.1fs: two clusters", time.Since(start).Seconds())
	return cs[0], cs[1]
}

// cleanupWith closes c when t ends, printing its components' last log
// lines first when t failed.
func (c *Cluster) cleanupWith(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			c.mu.Lock()
			procs := append([]*proc(nil), c.procs...)
			c.mu.Unlock()
			for _, p := range procs {
				t.Logf("k8s harness %s: last lines of %s:\n%s", c.Name, p.name, p.tail(20))
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("stop k8s harness %s: %v", c.Name, err)
		}
	})
}

// New starts a cluster: etcd, kube-apiserver, the `default` service account
// and kwok. The caller must Close it. Bench programs use it; tests use
// Start.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	start := time.Now()
	if opts.Name == "" {
		opts.Name = "k8s"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.QPS == 0 {
		opts.QPS = 1000
	}
	if opts.Burst == 0 {
		opts.Burst = 2000
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	c := &Cluster{Name: opts.Name, opts: opts}
	if opts.Tools != nil {
		c.tools = *opts.Tools
	} else {
		t, err := FindTools()
		if err != nil {
			return nil, err
		}
		c.tools = t
	}
	dir, err := os.MkdirTemp(tempBase(), "atom-k8s-"+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster %s: %w", opts.Name, err)
	}
	c.StartupTime = time.Since(start)
	return c, nil
}

// start brings the components up in order, logging each one's time.
func (c *Cluster) start(ctx context.Context) error {
	t0 := time.Now()
	var err error
	if c.pki, err = writePKI(filepath.Join(c.Dir, "certs")); err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	c.CAData = c.pki.caPEM
	c.AdminToken, c.CoordinatorToken = newToken(), newToken()

	// 1. etcd.
	if err := c.retryPorts(func() (*proc, error) { return c.startEtcd(ctx) }); err != nil {
		return err
	}
	tEtcd := time.Now()

	// 2. kube-apiserver, ready when /readyz says so.
	if err := c.retryPorts(func() (*proc, error) { return c.startAPIServer(ctx) }); err != nil {
		return err
	}
	tAPI := time.Now()

	// 3. Clients, kubeconfigs and what a controller-manager would make.
	c.AdminConfig = c.Config(c.AdminToken)
	c.CoordinatorConfig = c.Config(c.CoordinatorToken)
	if c.Admin, err = kubernetes.NewForConfig(c.AdminConfig); err != nil {
		return err
	}
	if c.Coordinator, err = kubernetes.NewForConfig(c.CoordinatorConfig); err != nil {
		return err
	}
	c.AdminKubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	c.CoordinatorKubeconfig = filepath.Join(c.Dir, "coordinator.kubeconfig")
	if err := c.writeKubeconfig(c.AdminKubeconfig, AdminUser, c.AdminToken); err != nil {
		return err
	}
	if err := c.writeKubeconfig(c.CoordinatorKubeconfig, CoordinatorUser, c.CoordinatorToken); err != nil {
		return err
	}
	if err := c.EnsureNamespace(ctx, metav1.NamespaceDefault); err != nil {
		return err
	}

	// 4. kwok, ready when its /healthz answers (after its controllers run).
	if err := c.retryPorts(func() (*proc, error) { return c.startKwok(ctx) }); err != nil {
		return err
	}
	now := time.Now()
	c.opts.Logf("k8s harness up in %.1fs: cluster %s at %s (etcd %.1fs, kube-apiserver %.1fs, kwok %.1fs)",
		now.Sub(t0).Seconds(), c.Name, c.Host, tEtcd.Sub(t0).Seconds(), tAPI.Sub(tEtcd).Seconds(), now.Sub(tAPI).Seconds())
	return nil
}

// retryPorts runs a start function again, on new ports, when its process
// lost a port race; up to three tries.
func (c *Cluster) retryPorts(start func() (*proc, error)) error {
	var err error
	for range 3 {
		var p *proc
		p, err = start()
		if err == nil || p == nil || !errors.Is(err, errExited) || !p.portInUse() {
			return err
		}
	}
	return err
}

// add records a started process so that Close stops it.
func (c *Cluster) add(p *proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
}

func (c *Cluster) startEtcd(ctx context.Context) (*proc, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	data := filepath.Join(c.Dir, "etcd")
	_ = os.RemoveAll(data) // a failed try's
	p, err := spawn(c.Dir, "etcd", c.tools.Etcd, []string{
		"--name=atom-test",
		"--data-dir=" + data,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=atom-test=" + peer,
		"--initial-cluster-state=new",
		"--log-level=warn",
		"--logger=zap",
	}, nil)
	if err != nil {
		return nil, err
	}
	c.add(p)
	hc := &http.Client{Timeout: time.Second}
	err = p.waitUntil(ctx, func(ctx context.Context) error {
		body, err := get(ctx, hc, client+"/health", "")
		if err == nil && !strings.Contains(body, `"health":"true"`) {
			err = fmt.Errorf("health: %s", body)
		}
		return err
	})
	if err != nil {
		return p, err
	}
	c.EtcdURL = client
	return p, nil
}

func (c *Cluster) startAPIServer(ctx context.Context) (*proc, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(c.Dir, "tokens.csv")
	// token,user,uid,"group1,group2"
	csv := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:%s\"\n",
		c.AdminToken, AdminUser, "atom-test-admin-uid",
		c.CoordinatorToken, CoordinatorUser, "atom-coordinator-uid", CoordinatorNamespace)
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		return nil, err
	}
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The `kubernetes` Service's endpoints may not be a loopback
		// address, and nothing in a test reaches the API server through it.
		"--endpoint-reconciler-type=none",
		// Debian's etcd 3.4.23 cannot report watch progress, so the API
		// server refuses watch-list streams; with WatchList on it also turns
		// every watch from resourceVersion "" or "0" into one (kwok's), which
		// then fail and back off for seconds. Off, clients list then watch.
		"--feature-gates=WatchList=false",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--cert-dir=" + filepath.Join(c.Dir, "certs"),
		"--tls-cert-file=" + c.pki.certFile,
		"--tls-private-key-file=" + c.pki.keyFile,
		"--client-ca-file=" + c.pki.caFile,
		"--token-auth-file=" + tokens,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + c.pki.saPubFile,
		"--service-account-signing-key-file=" + c.pki.saKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		// Logs and exec reach a real node's kubelet (AddRealNode) at its
		// InternalIP, with a client certificate it trusts; its serving
		// certificate is checked against the cluster's CA.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate=" + c.pki.kubeletClientCert,
		"--kubelet-client-key=" + c.pki.kubeletClientKey,
		"--kubelet-certificate-authority=" + c.pki.caFile,
		"--profiling=false",
		"--v=1",
	}
	if len(c.opts.EnableAdmissionPlugins) > 0 {
		args = append(args, "--enable-admission-plugins="+strings.Join(c.opts.EnableAdmissionPlugins, ","))
	}
	if len(c.opts.DisableAdmissionPlugins) > 0 {
		args = append(args, "--disable-admission-plugins="+strings.Join(c.opts.DisableAdmissionPlugins, ","))
	}
	args = append(args, c.opts.APIServerArgs...)
	p, err := spawn(c.Dir, "kube-apiserver", c.tools.KubeAPIServer, args, nil)
	if err != nil {
		return nil, err
	}
	c.add(p)
	host := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	err = p.waitUntil(ctx, func(ctx context.Context) error {
		_, err := get(ctx, hc, host+"/readyz", c.AdminToken)
		return err
	})
	if err != nil {
		return p, err
	}
	c.Host = host
	return p, nil
}

func (c *Cluster) startKwok(ctx context.Context) (*proc, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(c.Dir, "kwok")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		"--cidr=" + podCIDR,
		fmt.Sprintf("--server-address=127.0.0.1:%d", ports[0]),
	}
	for _, s := range c.tools.Stages {
		args = append(args, "--config="+s)
	}
	args = append(args, c.opts.KwokArgs...)
	// KWOK_WORKDIR keeps kwok from reading the user's ~/.kwok/kwok.yaml.
	p, err := spawn(c.Dir, "kwok", c.tools.Kwok, args, []string{"KWOK_WORKDIR=" + work})
	if err != nil {
		return nil, err
	}
	c.add(p)
	c.mu.Lock()
	c.kwok = p
	c.mu.Unlock()
	hc := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])
	err = p.waitUntil(ctx, func(ctx context.Context) error {
		_, err := get(ctx, hc, url, "")
		return err
	})
	return p, err
}

// restartKwok stops kwok and starts it again: it forgets the stage jobs it
// had queued (a heartbeat due for a node it no longer manages).
func (c *Cluster) restartKwok(ctx context.Context) error {
	c.mu.Lock()
	old := c.kwok
	c.mu.Unlock()
	if old != nil {
		old.kill()
	}
	return c.retryPorts(func() (*proc, error) { return c.startKwok(ctx) })
}

// StartKubeScheduler starts a kube-scheduler built from the same
// k8s.io/kubernetes module, with default settings and then args (e.g.
// --kube-api-qps=1000, --feature-gates=...), against the cluster
// (side-by-side benchmarks). Close stops it.
func (c *Cluster) StartKubeScheduler(ctx context.Context, args ...string) error {
	return c.StartComponent(ctx, "kube-scheduler", c.tools.KubeScheduler, args...)
}

// StartComponent starts a Kubernetes control-plane program that serves
// HTTPS health checks as kube-scheduler and kube-controller-manager do,
// as the cluster's admin on a free loopback port, with leader election
// off, then args; it returns once /healthz answers. Processes counts it;
// Close stops it.
func (c *Cluster) StartComponent(ctx context.Context, name, bin string, args ...string) error {
	return c.retryPorts(func() (*proc, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		p, err := spawn(c.Dir, name, bin, append([]string{
			"--kubeconfig=" + c.AdminKubeconfig,
			"--authentication-kubeconfig=" + c.AdminKubeconfig,
			"--authorization-kubeconfig=" + c.AdminKubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", ports[0]),
			"--cert-dir=" + filepath.Join(c.Dir, name+"-certs"),
			"--v=1",
		}, args...), nil)
		if err != nil {
			return nil, err
		}
		c.add(p)
		hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // its self-signed serving cert
		}}
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		return p, p.waitUntil(ctx, func(ctx context.Context) error {
			_, err := get(ctx, hc, url, "")
			return err
		})
	})
}

// StartProgram starts another program beside the cluster (a controller or
// webhook server a benchmark runs) with args and env (NAME=value, added to
// this process's), its output in the cluster's logs/, and returns once
// ready returns nil (at once when ready is nil). A program that exits
// first is an error with its last log lines. Processes counts it; Close
// stops it.
func (c *Cluster) StartProgram(ctx context.Context, name, bin string, args, env []string, ready func(context.Context) error) error {
	p, err := spawn(c.Dir, name, bin, args, env)
	if err != nil {
		return err
	}
	c.add(p)
	if ready == nil {
		return nil
	}
	return p.waitUntil(ctx, ready)
}

// Config returns a client configuration for the API server that sends
// token (any token: a test may check that a made-up one is refused).
func (c *Cluster) Config(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		QPS:             c.opts.QPS,
		Burst:           c.opts.Burst,
		UserAgent:       "atom-k8stest",
	}
}

func (c *Cluster) writeKubeconfig(path, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	cfg.CurrentContext = c.Name
	return clientcmd.WriteToFile(*cfg, path)
}

// RootCAConfigMap is the ConfigMap of every namespace that holds the
// cluster's CA certificate (key ca.crt), which a real kubelet projects into
// every Pod's service-account volume; EnsureNamespace makes it, as
// kube-controller-manager's root-ca-cert-publisher would.
const RootCAConfigMap = "kube-root-ca.crt"

// EnsureNamespace creates namespace name, if it is not there, with its
// `default` service account (which the ServiceAccount admission plugin
// wants for every Pod) and its kube-root-ca.crt ConfigMap (which a real
// kubelet waits for before it starts a Pod with a service-account token):
// no controller makes them here.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: name}, Data: map[string]string{"ca.crt": string(c.CAData)}}
	created := func(err error) bool { return err == nil || apierrors.IsAlreadyExists(err) }
	// Right after /readyz the API server may still be making its own
	// namespaces; retry briefly.
	var err error
	for {
		if _, err = c.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); created(err) {
			if _, err = c.Admin.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); created(err) {
				if _, err = c.Admin.CoreV1().ConfigMaps(name).Create(ctx, ca, metav1.CreateOptions{}); created(err) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create namespace %s, its default service account and kube-root-ca.crt: %w", name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CreateNamespace is EnsureNamespace for tests.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.EnsureNamespace(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// Close stops every process of the cluster and removes its directory;
// ATOM_K8S_KEEP=1 keeps the directory (logs, certificates) for a look.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	procs := c.procs
	c.mu.Unlock()
	// kwok and the scheduler first, then the API server, then etcd.
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].kill()
	}
	for _, p := range procs {
		if !p.exited() {
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
		}
	}
	if c.Dir == "" {
		return nil
	}
	if os.Getenv("ATOM_K8S_KEEP") != "" {
		c.opts.Logf("k8s harness %s: kept %s", c.Name, c.Dir)
		return nil
	}
	return os.RemoveAll(c.Dir)
}

// get fetches url, with a bearer token when one is given, and fails unless
// the answer is 200.
func get(ctx context.Context, hc *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, b)
	}
	return string(b), nil
}

// tempBase is where cluster directories go: /dev/shm when it is a roomy
// tmpfs (etcd's fsyncs cost nothing there), else the usual temp dir.
func tempBase() string {
	if d := os.Getenv("ATOM_K8S_TMPDIR"); d != "" {
		return d
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err == nil && uint64(st.Bavail)*uint64(st.Bsize) >= 2<<30 {
		if f, err := os.CreateTemp("/dev/shm", "atom-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
