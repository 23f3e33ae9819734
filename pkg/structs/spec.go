package structs

// User-facing specs (spec_job.go, spec_cluster.go) are decoded in
// spec_decode.go: one YAML 1.2 or JSON document, strictly, with errors that
// name the field path. Error helpers live here; value checks live in
// spec_values.go and spec_checks.go.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// MaxSpecBytes bounds the size of one spec document.
const MaxSpecBytes = 1 << 20

// FieldError reports a spec field whose value is not allowed. Its message
// names the field path, the value as written and what is allowed, e.g.
// `resources.accelerators.count 65 is not allowed: use 1 to 64`.
type FieldError struct {
	Field string // path in the spec: "resources.accelerators.count", "fallbacks[1].replicas"
	Msg   string // the rest of the message
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

// bad returns a FieldError saying value is not allowed at field. Strings
// (and Quantity) are quoted; want may hold fmt verbs for args.
func bad(field string, value any, want string, args ...any) *FieldError {
	var v string
	switch x := value.(type) {
	case string:
		v = strconv.Quote(x)
	case Quantity:
		v = strconv.Quote(string(x))
	default:
		v = fmt.Sprint(x)
	}
	return &FieldError{Field: field, Msg: v + " is not allowed: " + fmt.Sprintf(want, args...)}
}

// idx and key build field paths: idx("fallbacks", 1) = "fallbacks[1]",
// key("env", "A") = `env["A"]`.
func idx(field string, i int) string    { return field + "[" + strconv.Itoa(i) + "]" }
func key(field string, k string) string { return fmt.Sprintf("%s[%q]", field, k) }

// at joins a field path prefix and a field name: at("", "cpu") = "cpu",
// at("nodes[0]", "cpu") = "nodes[0].cpu".
func at(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// sortedKeys returns m's keys in order, so the first error is deterministic.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

type jsonField struct {
	name  string
	index []int
}

// jsonFields lists t's JSON fields in declaration order (no embedding: the
// spec types embed nothing).
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Index})
	}
	return out
}

// lookupField finds the field named exactly k.
func lookupField(fields []jsonField, k string) (jsonField, bool) {
	for _, f := range fields {
		if f.name == k {
			return f, true
		}
	}
	return jsonField{}, false
}
