package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// Kueue's own names: its namespace, and the webhook Service and Secret its
// internal certificate management looks after (the cert rotator keeps a
// valid certificate it finds in the Secret and injects the CA into the
// webhook configurations named after the Service).
const (
	kueueNamespace = "kueue-system"
	kueueService   = "kueue-webhook-service"
	kueueSecret    = "kueue-webhook-server-cert"
	queueLabel     = "kueue.x-k8s.io/queue-name"
)

// runKueue is the kueue side: Kueue admits -tasks one-GPU batch/v1 Jobs
// (half per team, each team's LocalQueue pointing at its ClusterQueue of
// half the cluster, both in one cohort), kube-controller-manager's Job
// controller makes their Pods and kube-scheduler binds them. All three
// use atom's client rate.
func runKueue(ctx context.Context, shape *podShape) (result, error) {
	tools, err := findBenchTools()
	if err != nil {
		return result{}, err
	}
	c, err := startCluster(ctx, "kueue")
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if err := startKueue(ctx, c, tools); err != nil {
		return result{}, err
	}
	if err := c.StartComponent(ctx, "kube-controller-manager", tools.controllerManager,
		append([]string{"--controllers=job"}, tunedClient()...)...); err != nil {
		return result{}, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	if err := c.StartKubeScheduler(ctx, tunedClient()...); err != nil {
		return result{}, fmt.Errorf("start kube-scheduler: %w", err)
	}
	if err := makeQueues(ctx, c); err != nil {
		return result{}, err
	}
	return measure(ctx, c, "kueue", func() error {
		return parallel(*flagTasks, func(i int) error {
			team := teams[i%len(teams)]
			one, none := int32(1), int32(0)
			j := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", team, i), Labels: map[string]string{queueLabel: team}},
				Spec: batchv1.JobSpec{
					Parallelism:  &one,
					Completions:  &one,
					BackoffLimit: &none,
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
						Spec:       shape.podSpec(),
					},
				},
			}
			_, err := c.Admin.BatchV1().Jobs(namespace).Create(ctx, j, metav1.CreateOptions{})
			return err
		})
	})
}

// benchTools are the programs and manifests `make k8s-bench-tools` builds
// (test/k8s/tools/build-bench.sh).
type benchTools struct {
	controllerManager, kueue string
	kueueCRDs                []string
	kueueWebhooks            string
}

// findBenchTools finds them in $ATOM_K8S_BENCH_TOOLS, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/atom/bench-k8s-v1.37.2-kueue-v0.17.0.
func findBenchTools() (benchTools, error) {
	dir := os.Getenv("ATOM_K8S_BENCH_TOOLS")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(k8stest.ToolsDir()), "bench-k8s-"+k8stest.KubernetesVersion+"-kueue-v0.17.0")
	}
	t := benchTools{
		controllerManager: filepath.Join(dir, "bin", "kube-controller-manager"),
		kueue:             filepath.Join(dir, "bin", "kueue"),
		kueueWebhooks:     filepath.Join(dir, "kueue", "webhooks.yaml"),
	}
	crds, _ := filepath.Glob(filepath.Join(dir, "kueue", "crd", "*.yaml"))
	t.kueueCRDs = crds
	for _, f := range []string{t.controllerManager, t.kueue, t.kueueWebhooks} {
		if _, err := os.Stat(f); err != nil {
			return t, fmt.Errorf("%s not found: run `make k8s-bench-tools` (builds kube-controller-manager and Kueue v0.17.0 into %s once; make bench-k8s does it)", f, dir)
		}
	}
	if len(crds) == 0 {
		return t, fmt.Errorf("no Kueue CRDs in %s: run `make k8s-bench-tools`", filepath.Join(dir, "kueue", "crd"))
	}
	return t, nil
}

// startKueue installs Kueue's CRDs and admission webhooks, gives its
// internal certificate management a serving certificate for 127.0.0.1
// signed by a CA the webhook configurations name, and starts it.
func startKueue(ctx context.Context, c *k8stest.Cluster, tools benchTools) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	webhookURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	certDir := filepath.Join(c.Dir, "kueue-certs")
	certs, err := writeWebhookCerts(certDir, kueueService+"."+kueueNamespace+".svc")
	if err != nil {
		return err
	}
	if err := c.EnsureNamespace(ctx, kueueNamespace); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kueueSecret, Namespace: kueueNamespace}, Data: certs.secretData()}
	if _, err := c.Admin.CoreV1().Secrets(kueueNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Kueue's certificate Secret: %w", err)
	}
	for _, f := range tools.kueueCRDs {
		crd, err := readObject(f)
		if err != nil {
			return err
		}
		if conversionCRDs[crd.GetName()] {
			// Served at /convert, as Kueue's kustomize patches set it.
			if err := unstructured.SetNestedField(crd.Object, map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"conversionReviewVersions": []any{"v1"},
					"clientConfig":             map[string]any{"url": webhookURL + "/convert", "caBundle": certs.caBundle()},
				},
			}, "spec", "conversion"); err != nil {
				return err
			}
		}
		if err := applyObject(ctx, c, crd); err != nil {
			return fmt.Errorf("apply %s: %w", filepath.Base(f), err)
		}
	}
	webhooks, err := kueueWebhooks(tools.kueueWebhooks, webhookURL, certs.caBundle())
	if err != nil {
		return err
	}
	for _, w := range webhooks {
		if err := applyObject(ctx, c, w); err != nil {
			return fmt.Errorf("apply %s %s: %w", w.GetKind(), w.GetName(), err)
		}
	}

	config := filepath.Join(c.Dir, "kueue.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, kueueConfig, kueueNamespace, ports[1], ports[0], certDir,
		kueueService, kueueSecret, float64(tunedQPS()), tunedBurst()), 0o600); err != nil {
		return err
	}
	hc := &http.Client{Timeout: time.Second}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	webhook := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.pool()}}}
	err = c.StartProgram(ctx, "kueue", tools.kueue,
		[]string{"--config=" + config, "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=error"},
		[]string{"KUBECONFIG=" + c.AdminKubeconfig},
		func(ctx context.Context) error {
			if err := httpGet(ctx, hc, readyz); err != nil {
				return err
			}
			// The webhook server answers with the harness's certificate.
			return httpGet(ctx, webhook, webhookURL+"/healthz-probe")
		})
	if err != nil {
		return fmt.Errorf("start kueue: %w", err)
	}
	got, err := c.Admin.CoreV1().Secrets(kueueNamespace).Get(ctx, kueueSecret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if string(got.Data["tls.crt"]) != string(certs.certPEM) {
		return fmt.Errorf("kueue replaced the serving certificate in %s/%s: the API server would no longer trust its webhooks", kueueNamespace, kueueSecret)
	}
	return nil
}

// conversionCRDs are the CRDs Kueue serves conversion webhooks for (and
// whose caBundle its cert rotator keeps).
var conversionCRDs = map[string]bool{
	"localqueues.kueue.x-k8s.io": true, "clusterqueues.kueue.x-k8s.io": true, "cohorts.kueue.x-k8s.io": true,
	"workloads.kueue.x-k8s.io": true, "multikueueclusters.kueue.x-k8s.io": true,
}

// kueueConfig is Kueue's configuration: the shipped one
// (config/components/manager/controller_manager_config.yaml) with only the
// batch/v1 Job integration, leader election and the metrics server off,
// its ports on loopback, its certificates where the harness put them and
// the client rate atom's coordinator uses.
const kueueConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %s
  webhookSecretName: %s
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: %g
  burst: %d
integrations:
  frameworks:
  - batch/job
`

// kueueWebhooks are Kueue's webhook configurations with the webhooks of
// batch/v1 Jobs and of Kueue's own kinds (the only ones this
// configuration serves), calling url instead of the in-cluster Service,
// and named as the cert rotator expects.
func kueueWebhooks(path, url, caBundle string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		kind := strings.TrimSuffix(strings.ToLower(o.GetKind()), "webhookconfiguration")
		o.SetName("kueue-" + kind + "-webhook-configuration")
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			hm := h.(map[string]any)
			p, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
			if !strings.Contains(p, "-batch-v1-job") && !strings.Contains(p, "-kueue-x-k8s-io-") {
				continue
			}
			hm["clientConfig"] = map[string]any{"url": url + p, "caBundle": caBundle}
			kept = append(kept, hm)
		}
		if err := unstructured.SetNestedSlice(o.Object, kept, "webhooks"); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("%s: %d webhook configurations, want a mutating and a validating one", path, len(out))
	}
	return out, nil
}

// makeQueues makes the ResourceFlavor, one ClusterQueue per team (half
// the cluster's GPUs, CPU and memory each, in the cohort "bench") and each
// team's LocalQueue in the namespace, and waits for the ClusterQueues to
// be active.
func makeQueues(ctx context.Context, c *k8stest.Cluster) error {
	gpus, cpus, mem := teamQuota()
	objs := []string{`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"default"}}`}
	for _, t := range teams {
		objs = append(objs, fmt.Sprintf(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":%q},
"spec":{"cohortName":"bench","namespaceSelector":{},"resourceGroups":[{"coveredResources":["cpu","memory",%q],
"flavors":[{"name":"default","resources":[{"name":"cpu","nominalQuota":"%d"},{"name":"memory","nominalQuota":"%dGi"},{"name":%q,"nominalQuota":"%d"}]}]}]}}`,
			t, k8stest.GPUResource, cpus, mem, k8stest.GPUResource, gpus),
			fmt.Sprintf(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":%q,"namespace":%q},"spec":{"clusterQueue":%q}}`,
				t, namespace, t))
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(o), &u.Object); err != nil {
			return err
		}
		if err := applyObject(ctx, c, u); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	cqs := dyn.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"})
	for _, t := range teams {
		if err := poll(ctx, func() error {
			cq, err := cqs.Get(ctx, t, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Active" && m["status"] == "True" {
					return nil
				}
			}
			return fmt.Errorf("ClusterQueue %s not active: %v", t, conds)
		}); err != nil {
			return err
		}
	}
	return nil
}

// applyObject server-side applies o, retrying while its kind is not served
// yet (a CRD just made) or a webhook is not answering yet.
func applyObject(ctx context.Context, c *k8stest.Cluster, o *unstructured.Unstructured) error {
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	return poll(ctx, func() error {
		_, err := c.ApplyYAML(ctx, nil, data)
		return err
	})
}

// readObject reads a one-object YAML file.
func readObject(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &o.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// poll calls f every 100 ms until it returns nil; when ctx ends, or after
// 60 s, it returns f's last error.
func poll(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpGet fails unless url answers at all over TLS when it is https: any
// status will do (the webhook server has no health path).
func httpGet(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if strings.HasPrefix(url, "http://") && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
