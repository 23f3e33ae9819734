package deploy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// deployDir is the repository's deploy/.
func deployDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy")
}

// manifests returns every file under deploy/ but its README, those that
// create Namespaces first (the others put objects in them), each group by
// name.
func manifests(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(deployDir(t), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(d.Name()) != ".yaml" {
			return err
		}
		files = append(files, path)
		return nil
	})
	require.NoError(t, err)
	namespaces := func(path string) bool {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return bytes.Contains(b, []byte("\nkind: Namespace\n"))
	}
	slices.SortStableFunc(files, func(a, b string) int {
		switch na, nb := namespaces(a), namespaces(b); {
		case na && !nb:
			return -1
		case nb && !na:
			return 1
		}
		return strings.Compare(a, b)
	})
	return files
}

// TestManifestsApply server-side applies every manifest under deploy/ to a
// real API server, which validates each object (no dry run), and checks
// what they add up to: the coordinator's StatefulSet and its Services,
// volumes, probes and configuration; the StorageClasses; the quota; Vector;
// and that the coordinator's service account may do what it does and no
// more.
func TestManifestsApply(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	files := manifests(t)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	assert.ElementsMatch(t, []string{"cluster-config.yaml", "coordinator.yaml", "namespace-atom-jobs.yaml",
		"priorityclasses.yaml", "rbac.yaml", "storageclasses.yaml", "vector.yaml"}, names,
		"every file under deploy/ is applied (a new one belongs in this list)")

	applied := map[string]*unstructured.Unstructured{} // by "Kind namespace/name"
	for _, f := range files {
		objs := c.ApplyFile(t, f)
		require.NotEmpty(t, objs, "%s holds objects", f)
		for _, o := range objs {
			require.NotEmpty(t, o.GetUID(), "%s: %s %s stored", f, o.GetKind(), o.GetName())
			applied[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	var kinds []string
	for k := range applied {
		kinds = append(kinds, k)
	}
	assert.ElementsMatch(t, []string{
		"Namespace /atom", "ServiceAccount atom/atom-coordinator", "ClusterRole /atom-coordinator", "ClusterRoleBinding /atom-coordinator",
		"PriorityClass /atom-high", "PriorityClass /atom-normal", "PriorityClass /atom-low", "PriorityClass /atom-coordinator",
		"StorageClass /ceph-rbd", "StorageClass /local-path",
		"Namespace /atom-jobs", "ResourceQuota atom-jobs/atom-jobs",
		"ServiceAccount atom-jobs/spark", "Role atom-jobs/spark-driver", "RoleBinding atom-jobs/spark-driver",
		"Role atom-jobs/atom-coordinator-configs", "RoleBinding atom-jobs/atom-coordinator-configs",
		"ConfigMap atom/atom-cluster-config",
		"Service atom/atom-coordinator-peers", "Service atom/atom-coordinator", "StatefulSet atom/atom-coordinator",
		"PodDisruptionBudget atom/atom-coordinator",
		"ServiceAccount atom/vector", "ClusterRole /atom-vector", "ClusterRoleBinding /atom-vector",
		"ConfigMap atom/vector", "DaemonSet atom/vector",
	}, kinds)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkCoordinator(ctx, t, c)
	checkStorage(ctx, t, c)
	checkVector(ctx, t, c)
	checkRBAC(ctx, t, c)

	// Applying everything again changes nothing and is accepted.
	for _, f := range files {
		for _, o := range c.ApplyFile(t, f) {
			before := applied[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()]
			assert.Equal(t, before.GetGeneration(), o.GetGeneration(), "%s %s: a second apply is no change", o.GetKind(), o.GetName())
		}
	}
}

func checkCoordinator(ctx context.Context, t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	ss, err := c.Admin.AppsV1().StatefulSets("atom").Get(ctx, "atom-coordinator", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, *ss.Spec.Replicas)
	assert.Equal(t, "atom-coordinator-peers", ss.Spec.ServiceName)
	assert.Equal(t, appsv1.ParallelPodManagement, ss.Spec.PodManagementPolicy)
	pod := ss.Spec.Template.Spec
	assert.Equal(t, "atom-coordinator", pod.ServiceAccountName)
	require.Len(t, pod.Containers, 1)
	ctr := pod.Containers[0]
	script := strings.Join(ctr.Args, " ")
	for _, flag := range []string{"server", "--id \"$POD_NAME\"", "--bootstrap", "--join", "--peer", "--raft-advertise \"$self:7000\"",
		"--data-dir /var/lib/atom", "--tokens /etc/atom/tokens/tokens.yaml", "--cluster-config /etc/atom/cluster/cluster.yaml",
		"atom-coordinator-$i.$peers:7070", "peers=atom-coordinator-peers.atom.svc.cluster.local",
		"--tls-cert /etc/atom/tls/tls.crt", "--tls-key /etc/atom/tls/tls.key", "--tls-ca /etc/atom/tls/ca.crt",
		`--advertise "https://$self:7070"`, "--join https://", "=https://atom-coordinator-$i"} {
		assert.Contains(t, script, flag)
	}
	assert.NotContains(t, script, "http://", "TLS everywhere")
	assert.Contains(t, ctr.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/atom/tls", ReadOnly: true})
	var tlsSecret string
	for _, v := range pod.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			tlsSecret = v.Secret.SecretName
		}
	}
	assert.Equal(t, "atom-coordinator-tls", tlsSecret, "deploy/tls.sh's Secret")
	require.NotNil(t, ctr.ReadinessProbe)
	require.NotNil(t, ctr.LivenessProbe)
	assert.Equal(t, "/readyz", ctr.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/healthz", ctr.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "http", ctr.ReadinessProbe.HTTPGet.Port.String())
	assert.Equal(t, corev1.URISchemeHTTPS, ctr.ReadinessProbe.HTTPGet.Scheme)
	assert.Equal(t, corev1.URISchemeHTTPS, ctr.LivenessProbe.HTTPGet.Scheme)
	require.Len(t, ss.Spec.VolumeClaimTemplates, 1)
	claim := ss.Spec.VolumeClaimTemplates[0]
	assert.Equal(t, "data", claim.Name)
	assert.Equal(t, "ceph-rbd", *claim.Spec.StorageClassName)
	assert.Contains(t, ctr.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/var/lib/atom"})
	pc, err := c.Admin.SchedulingV1().PriorityClasses().Get(ctx, pod.PriorityClassName, metav1.GetOptions{})
	require.NoError(t, err, "the coordinator's priority class is one of deploy's")
	// Above every task's, and preempting: a server moved off a failed
	// node finds room on nodes atom filled (atom-high never preempts).
	high, err := c.Admin.SchedulingV1().PriorityClasses().Get(ctx, "atom-high", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Greater(t, pc.Value, high.Value)
	require.NotNil(t, pc.PreemptionPolicy)
	assert.Equal(t, corev1.PreemptLowerPriority, *pc.PreemptionPolicy)

	peers, err := c.Admin.CoreV1().Services("atom").Get(ctx, "atom-coordinator-peers", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClusterIPNone, peers.Spec.ClusterIP)
	assert.True(t, peers.Spec.PublishNotReadyAddresses)
	client, err := c.Admin.CoreV1().Services("atom").Get(ctx, "atom-coordinator", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, corev1.ClusterIPNone, client.Spec.ClusterIP)
	assert.Equal(t, ss.Spec.Template.Labels, peers.Spec.Selector)
	assert.Equal(t, ss.Spec.Template.Labels, client.Spec.Selector)

	// The cluster config is one the coordinator accepts, and its task
	// namespace is deploy's.
	cm, err := c.Admin.CoreV1().ConfigMaps("atom").Get(ctx, "atom-cluster-config", metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := structs.ParseClusterConfig([]byte(cm.Data["cluster.yaml"]))
	require.NoError(t, err)
	require.Len(t, cfg.Clusters, 1)
	assert.Equal(t, "kubernetes", cfg.Clusters[0].Backend)
	assert.Equal(t, "", cfg.Clusters[0].Kubeconfig, "in-cluster")
	_, err = c.Admin.CoreV1().Namespaces().Get(ctx, cfg.Clusters[0].Namespace, metav1.GetOptions{})
	assert.NoError(t, err)
}

func checkStorage(ctx context.Context, t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	rbd, err := c.Admin.StorageV1().StorageClasses().Get(ctx, "ceph-rbd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rbd.csi.ceph.com", rbd.Provisioner)
	for _, p := range []string{"clusterID", "pool", "imageFeatures", "csi.storage.k8s.io/provisioner-secret-name",
		"csi.storage.k8s.io/node-stage-secret-name", "csi.storage.k8s.io/controller-expand-secret-name"} {
		assert.NotEmpty(t, rbd.Parameters[p], "ceph-rbd parameter %s", p)
	}
	local, err := c.Admin.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rancher.io/local-path", local.Provisioner)
	assert.Equal(t, "WaitForFirstConsumer", string(*local.VolumeBindingMode))

	q, err := c.Admin.CoreV1().ResourceQuotas("atom-jobs").Get(ctx, "atom-jobs", metav1.GetOptions{})
	require.NoError(t, err)
	gpus := q.Spec.Hard["requests.nvidia.com/gpu"]
	assert.Positive(t, gpus.Value())
}

func checkVector(ctx context.Context, t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	ds, err := c.Admin.AppsV1().DaemonSets("atom").Get(ctx, "vector", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "vector", ds.Spec.Template.Spec.ServiceAccountName)
	cm, err := c.Admin.CoreV1().ConfigMaps("atom").Get(ctx, "vector", metav1.GetOptions{})
	require.NoError(t, err)
	conf := cm.Data["vector.yaml"]
	assert.Contains(t, conf, "type: kubernetes_logs")
	assert.Contains(t, conf, "type: clickhouse")
}

// checkRBAC asks the API server what the coordinator's service account may
// do (SelfSubjectAccessReview, as the coordinator).
func checkRBAC(ctx context.Context, t *testing.T, c *k8stest.Cluster) {
	t.Helper()
	mayIn := func(ns, verb string, gr schema.GroupResource, sub string) bool {
		r, err := c.Coordinator.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: gr.Group, Resource: gr.Resource, Subresource: sub,
			}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	may := func(verb string, gr schema.GroupResource, sub string) bool { return mayIn("atom-jobs", verb, gr, sub) }
	pods, pvcs := schema.GroupResource{Resource: "pods"}, schema.GroupResource{Resource: "persistentvolumeclaims"}
	secrets, nodes := schema.GroupResource{Resource: "secrets"}, schema.GroupResource{Resource: "nodes"}
	for _, v := range []string{"create", "delete", "get", "list", "watch"} {
		assert.True(t, may(v, pods, ""), "pods %s", v)
		assert.True(t, may(v, pvcs, ""), "persistentvolumeclaims %s", v)
	}
	assert.True(t, may("create", pods, "binding"), "pods/binding create")
	assert.True(t, may("get", pods, "log"), "pods/log get (job logs)")
	// Secrets in the jobs' namespace only, for users' configs and
	// secrets; task Pods exchange their bound service-account token,
	// which the coordinator reviews (TokenReview), cluster-wide.
	for _, v := range []string{"create", "delete", "get", "list"} {
		assert.True(t, may(v, secrets, ""), "secrets %s", v)
		assert.True(t, may(v, schema.GroupResource{Resource: "configmaps"}, ""), "configmaps %s", v)
		assert.False(t, mayIn("atom", v, secrets, ""), "secrets %s in atom", v)
		assert.False(t, mayIn("default", v, secrets, ""), "secrets %s in default", v)
	}
	assert.False(t, may("update", secrets, ""), "secrets update (the objects are immutable)")
	reviews := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	assert.True(t, mayIn("", "create", reviews, ""), "tokenreviews create")
	assert.False(t, may("create", schema.GroupResource{Resource: "serviceaccounts"}, "token"), "serviceaccounts/token create")
	for _, v := range []string{"get", "list", "watch"} {
		assert.True(t, may(v, nodes, ""), "nodes %s", v)
	}
	assert.False(t, may("delete", nodes, ""), "nodes delete")
	assert.False(t, may("update", nodes, ""), "nodes update")

	// Spark drivers (service account atom-jobs/spark) ask for their
	// executor Pods and their ConfigMap in atom-jobs, and nothing else.
	spark := func(ns, verb string, gr schema.GroupResource) bool {
		r, err := c.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authv1.SubjectAccessReview{
			Spec: authv1.SubjectAccessReviewSpec{User: "system:serviceaccount:atom-jobs:spark",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:atom-jobs"},
				ResourceAttributes: &authv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: gr.Group, Resource: gr.Resource}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	configMaps := schema.GroupResource{Resource: "configmaps"}
	for _, v := range []string{"create", "delete", "get", "list", "watch", "deletecollection"} {
		assert.True(t, spark("atom-jobs", v, pods), "spark: pods %s", v)
		assert.True(t, spark("atom-jobs", v, configMaps), "spark: configmaps %s", v)
	}
	assert.False(t, spark("atom", "create", pods), "spark: pods create in atom")
	assert.False(t, spark("atom-jobs", "get", secrets), "spark: secrets get")
	assert.False(t, spark("", "list", nodes), "spark: nodes list")
}
