package structs

// Field checks shared by job and node specs.

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkMountPath refuses relative, unclean, root and repeated mount paths;
// paths maps each path seen to the field that holds it.
func checkMountPath(field, p string, paths map[string]string) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || len(p) > 1024 || strings.Contains(p, ":") {
		return bad(field, p, "use a clean absolute path other than / without ':', such as /data")
	}
	if other, ok := paths[p]; ok {
		return bad(field, p, "%s already mounts there", other)
	}
	paths[p] = field
	return nil
}

func checkLabels(field string, m map[string]string) error {
	for _, k := range sortedKeys(m) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return bad(field, k, "use a label key: %s", ValidationText(errs))
		}
		if errs := validation.IsValidLabelValue(m[k]); len(errs) > 0 {
			return bad(key(field, k), m[k], "use a label value: %s", ValidationText(errs))
		}
	}
	return nil
}

// checkSelector parses a Kubernetes label selector ("gpu=A100,fabric in (ib)").
func checkSelector(field, sel string, emptyOK bool) error {
	if sel == "" && emptyOK {
		return nil
	}
	if strings.TrimSpace(sel) == "" {
		return bad(field, sel, "use a non-empty label selector such as app=web")
	}
	if len(sel) > 1024 {
		return bad(field, sel[:32]+"...", "use at most 1024 characters")
	}
	if _, err := labels.Parse(sel); err != nil {
		return bad(field, sel, "use a label selector such as gpu=A100,fabric in (ib): %v", err)
	}
	return nil
}

// checkToleration accepts the Exists and Equal operators (the scheduler
// matches no others) and the three taint effects.
func checkToleration(field string, t corev1.Toleration) error {
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return bad(field+".key", t.Key, "use a taint key: %s", ValidationText(errs))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return bad(field+".value", t.Value, "operator Exists takes no value")
		}
	case "", corev1.TolerationOpEqual:
		if t.Key == "" {
			return bad(field+".key", t.Key, "operator Equal needs a key (use Exists to tolerate everything)")
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return bad(field+".value", t.Value, "use a taint value: %s", ValidationText(errs))
		}
	default:
		return bad(field+".operator", string(t.Operator), "use Exists or Equal")
	}
	if err := checkEffect(field+".effect", t.Effect, true); err != nil {
		return err
	}
	if ts := t.TolerationSeconds; ts != nil {
		if t.Effect != corev1.TaintEffectNoExecute {
			return bad(field+".tolerationSeconds", *ts, "only NoExecute tolerations take tolerationSeconds")
		}
		if *ts < 0 {
			return bad(field+".tolerationSeconds", *ts, "use 0 or more seconds")
		}
	}
	return nil
}

func checkEffect(field string, e corev1.TaintEffect, emptyOK bool) error {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case "":
		if emptyOK {
			return nil
		}
	}
	return bad(field, string(e), "use NoSchedule, PreferNoSchedule or NoExecute")
}

// validateNodeName accepts DNS-1123 subdomains, as Kubernetes node names are
// (often host names such as ip-10-0-0-1.ec2.internal).
func validateNodeName(field string, n NodeID) error {
	if errs := validation.IsDNS1123Subdomain(string(n)); len(errs) > 0 {
		return bad(field, string(n), "use a node name (a DNS-1123 subdomain): %s", ValidationText(errs))
	}
	return nil
}

func cloneMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
