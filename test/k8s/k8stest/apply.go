package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the field manager of the harness's server-side applies.
const FieldManager = "atom-k8stest"

// ApplyYAML server-side applies every object of a multi-document YAML (or
// JSON) stream, in order, as the identity of cfg (Admin when nil), and
// returns them as the API server stored them. Namespaced objects without a
// namespace go to `default`.
func (c *Cluster) ApplyYAML(ctx context.Context, cfg *rest.Config, data []byte) ([]*unstructured.Unstructured, error) {
	if cfg == nil {
		cfg = c.AdminConfig
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj.Object) == 0 {
			continue // an empty document
		}
		gvk := obj.GroupVersionKind()
		what := fmt.Sprintf("document %d (%s %s)", i, gvk.Kind, obj.GetName())
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset() // a kind an earlier document defined
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", what, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		got, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return out, fmt.Errorf("apply %s: %w", what, err)
		}
		out = append(out, got)
	}
}

// ApplyFile server-side applies the objects of a YAML file as Admin,
// failing t on the first one the API server refuses.
func (c *Cluster) ApplyFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := c.ApplyYAML(ctx, nil, data)
	if err != nil {
		t.Fatalf("cluster %s: apply %s: %v", c.Name, path, err)
	}
	return objs
}
