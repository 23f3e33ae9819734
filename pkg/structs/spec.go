package structs

// User-facing specs (spec_job.go, spec_cluster.go) are decoded here: one
// YAML or JSON document, strictly, with errors that name the field path.
// Value checks live in spec_values.go and spec_checks.go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
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
func idx(field string, i int) string    { return fmt.Sprintf("%s[%d]", field, i) }
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

// decodeSpec strictly decodes one YAML or JSON document into out (a pointer
// to a spec struct). what names the document in messages ("job spec").
func decodeSpec(data []byte, out any, what string) error {
	if len(data) > MaxSpecBytes {
		return fmt.Errorf("%s is %d bytes: at most %d are allowed", what, len(data), MaxSpecBytes)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%s is not valid UTF-8 (first bad byte at offset %d)", what, firstBadUTF8(data))
	}
	if isEmptyDoc(data) {
		return fmt.Errorf("%s is empty", what)
	}
	if multiDoc(data) {
		return fmt.Errorf("%s holds several YAML documents: give one per spec", what)
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return decodeError(data, out, what, err)
	}
	// encoding/json matches field names ignoring case; specs are exact.
	if fe := unknownField(data, reflect.TypeOf(out).Elem()); fe != nil {
		return fe
	}
	return nil
}

// firstBadUTF8 returns the offset of the first byte that is not valid UTF-8.
func firstBadUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// isEmptyDoc reports whether data holds no value: only blank lines,
// comments, document markers, null or ~. "{}" is a mapping, not empty.
func isEmptyDoc(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") || l == "---" || l == "..." || l == "null" || l == "~" {
			continue
		}
		return false
	}
	return true
}

// multiDoc reports whether a "---" document marker follows content. A marker
// at column 0 cannot occur inside a scalar of a single document.
func multiDoc(data []byte) bool {
	content := false
	for _, line := range strings.Split(string(data), "\n") {
		l := strings.TrimRight(line, " \t\r")
		switch {
		case l == "---" || strings.HasPrefix(l, "--- "):
			if content {
				return true
			}
			content = strings.TrimSpace(strings.TrimPrefix(l, "---")) != ""
		case l != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") && !strings.HasPrefix(l, "%"):
			content = true
		}
	}
	return false
}

// decodeError rewrites a sigs.k8s.io/yaml error so it names the field.
func decodeError(data []byte, out any, what string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return typeError(te)
	}
	if te != nil {
		return fmt.Errorf("%s is a YAML or JSON %s: write a mapping of fields, such as kind: command", what, te.Value)
	}
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) {
		if field := nonFinite(data); field != "" {
			return &FieldError{Field: field, Msg: uv.Str + " is not allowed: use a finite number"}
		}
		return fmt.Errorf("%s has the number %s: use finite numbers", what, uv.Str)
	}
	msg := err.Error()
	if i := strings.Index(msg, "json: unknown field "); i >= 0 {
		name, _ := strconv.Unquote(msg[i+len("json: unknown field "):])
		if fe := unknownField(data, reflect.TypeOf(out).Elem()); fe != nil {
			return fe
		}
		return fmt.Errorf("%s: unknown field %q", what, name)
	}
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	return fmt.Errorf("parse %s: %s", what, msg)
}

// nonFinite returns the path of the first NaN or infinite number in data,
// which JSON cannot carry, or "".
func nonFinite(data []byte) string {
	var v any
	if goyaml.Unmarshal(data, &v) != nil {
		return ""
	}
	var walk func(v any, path string) string
	walk = func(v any, path string) string {
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return path
			}
		case map[any]any:
			keys := make([]string, 0, len(x))
			vals := map[string]any{}
			for k, e := range x {
				ks := fmt.Sprint(k)
				keys = append(keys, ks)
				vals[ks] = e
			}
			sort.Strings(keys)
			for _, k := range keys {
				if p := walk(vals[k], at(path, k)); p != "" {
					return p
				}
			}
		case []any:
			for i, e := range x {
				if p := walk(e, idx(path, i)); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(v, "")
}

// typeError turns a JSON type mismatch into a FieldError.
func typeError(te *json.UnmarshalTypeError) error {
	v, isNum := strings.CutPrefix(te.Value, "number ")
	if !isNum {
		v = "(a " + te.Value + ")"
	}
	want := "use a value of type " + te.Type.String()
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		want = "use a whole number"
		if r, ok := new(big.Rat).SetString(v); ok && r.IsInt() {
			want += " that fits in 64 bits"
		}
	case reflect.String:
		want = "use a string"
	case reflect.Bool:
		want = "use true or false"
	case reflect.Slice:
		want = "use a list"
	case reflect.Map, reflect.Struct:
		want = "use a mapping"
	}
	return &FieldError{Field: te.Field, Msg: v + " is not allowed: " + want}
}

// unknownField finds the path of the first field in data (in sorted order)
// that t does not have under exactly that name, and lists the fields
// allowed there.
func unknownField(data []byte, t reflect.Type) *FieldError {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(j, &v) != nil {
		return nil
	}
	return findUnknown(v, t, "")
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func findUnknown(v any, t reflect.Type, path string) *FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			f, ok := lookupField(fields, k)
			if !ok {
				names := make([]string, len(fields))
				for i, f := range fields {
					names[i] = f.name
				}
				return &FieldError{Field: at(path, k), Msg: "is not a known field: use " + strings.Join(names, ", ")}
			}
			if fe := findUnknown(m[k], t.FieldByIndex(f.index).Type, at(path, f.name)); fe != nil {
				return fe
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if fe := findUnknown(m[k], t.Elem(), key(path, k)); fe != nil {
					return fe
				}
			}
		}
	case reflect.Slice:
		if a, ok := v.([]any); ok {
			for i, e := range a {
				if fe := findUnknown(e, t.Elem(), idx(path, i)); fe != nil {
					return fe
				}
			}
		}
	}
	return nil
}

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
