package structs

// Decoding of user-facing specs: one YAML 1.2 or JSON document, strictly.
//
// The text is parsed with go.yaml.in/yaml/v3 into a node tree, which is
// converted to JSON here, guided by the Go type it decodes into, and then
// decoded with encoding/json. Doing the conversion ourselves keeps YAML 1.1
// out of specs:
//
//   - Scalars follow the YAML 1.2 core schema: only true/false (True, TRUE,
//     False, FALSE) are booleans, and yes, no, on, off, y, n are plain text.
//   - A field of string type takes a scalar as written: name: on is "on",
//     project: no is "no", tags: {ib: yes} is "yes", name: 010 is "010".
//     Quoting is never needed for that; null, ~ and an empty value leave
//     the field unset.
//   - Numbers are decimal: replicas: 010 is 10, not 8. The YAML 1.1 and
//     1.2 forms 0x10, 0o10 and 0b10 are refused where a number is expected
//     (they are not numbers in JSON either); 1_000 is not a number.
//   - .nan and .inf are refused where a number is expected, naming the field.
//   - Keys are matched exactly (encoding/json alone ignores case); unknown
//     keys and keys given twice are refused, naming the field.
//   - Anchors, aliases and << merge keys work, but what aliases expand to is
//     bounded (billion laughs), as is nesting; tags other than the core
//     ones (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are refused.
//   - The text holds exactly one document: a second one after ---, after
//     ..., or a second JSON value after the first, is refused; a document
//     marker with nothing after it is no document (spec_doc.go).
//   - A %YAML 1.2 directive and lines of only spaces and tabs, which the
//     parser refuses, are taken (spec_text.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/atom-sched/atom/pkg/suggest"
)

// Bounds on the structure of one spec. Specs nest a few levels only; alias
// expansion may add at most maxAliasWeight values plus scalar bytes to what
// is written out in the text (itself bounded by MaxSpecBytes).
const (
	maxSpecDepth   = 64
	maxAliasWeight = 1 << 20
)

var quantityType = reflect.TypeFor[Quantity]()

// DecodeStrict decodes a config file of the coordinator (the tokens file)
// as specs are: one YAML 1.2 or JSON document, unknown fields refused,
// `yes`/`on` not booleans, bounded size, depth and aliases.
func DecodeStrict(data []byte, out any, what string) error { return decodeSpec(data, out, what) }

// decodeSpec strictly decodes one YAML or JSON document into out (a pointer
// to a spec struct). what names the document in messages ("job spec").
func decodeSpec(data []byte, out any, what string) error {
	root, err := SpecRoot(data, what)
	if err != nil {
		return err
	}
	if err := checkAliases(root, what); err != nil {
		return err
	}
	d := &specDecoder{what: what}
	v, err := d.value(root, reflect.TypeOf(out).Elem(), "", 0)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("parse %s: %v", what, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return decodeError(what, err)
	}
	return nil
}

// checkAliases refuses alias bombs and alias cycles anywhere in the
// document, before anything is expanded. It weighs every node once (1 plus
// its scalar's bytes, plus what its children and alias target weigh), so it
// learns in linear time what a full expansion would weigh.
func checkAliases(root *yaml.Node, what string) error {
	const limit = 1 << 40 // weights saturate here
	memo := map[*yaml.Node]int{}
	raw := 0 // the weight of the text as written, with aliases unexpanded
	var weigh func(n *yaml.Node) (int, error)
	weigh = func(n *yaml.Node) (int, error) {
		if w, ok := memo[n]; ok {
			if w < 0 {
				return 0, fmt.Errorf("%s: line %d: an alias refers to a node that holds it", what, n.Line)
			}
			return w, nil
		}
		memo[n] = -1
		w := 1 + len(n.Value)
		raw += w
		kids := n.Content
		if n.Kind == yaml.AliasNode {
			kids = []*yaml.Node{n.Alias}
		}
		for _, c := range kids {
			cw, err := weigh(c)
			if err != nil {
				return 0, err
			}
			w = min(w+cw, limit)
		}
		memo[n] = w
		return w, nil
	}
	total, err := weigh(root)
	if err != nil {
		return err
	}
	if total-raw > maxAliasWeight {
		return fmt.Errorf("%s: excessive aliasing: its aliases expand to more than %d values and bytes: write it out with fewer aliases", what, maxAliasWeight)
	}
	return nil
}

// specDecoder converts a yaml.Node tree to JSON values (map[string]any,
// []any, string, json.Number, bool, nil) shaped for a Go type.
type specDecoder struct {
	what string
}

// value converts n for a field of type t (nil: any type) at path.
func (d *specDecoder) value(n *yaml.Node, t reflect.Type, path string, depth int) (any, error) {
	if depth > maxSpecDepth {
		return nil, fmt.Errorf("%s: line %d: it nests deeper than %d levels", d.what, n.Line, maxSpecDepth)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t != quantityType && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		t = nil // its own format (metav1.Time): plain YAML 1.2 values
	}
	if n.Kind != yaml.AliasNode && n.Style&yaml.TaggedStyle != 0 && !coreTag(n) {
		return nil, fmt.Errorf("%s: line %d: the tag %s is not supported: write plain YAML or JSON values", d.what, n.Line, n.Tag)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return d.value(n.Alias, t, path, depth)
	case yaml.ScalarNode:
		return d.scalar(n, t, path)
	case yaml.SequenceNode:
		var elem reflect.Type
		switch {
		case t == nil || t.Kind() == reflect.Interface:
		case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
			elem = t.Elem()
		default:
			return nil, mismatch(path, "(a list)", t)
		}
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c, elem, idx(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if t != nil && t.Kind() != reflect.Struct && t.Kind() != reflect.Map && t.Kind() != reflect.Interface {
			return nil, mismatch(path, "(a mapping)", t)
		}
		out := map[string]any{}
		return out, d.mapping(n, t, path, depth, out)
	}
	return nil, fmt.Errorf("%s: line %d: unexpected YAML node", d.what, n.Line)
}

// mapping converts a mapping node into out. Keys set in the mapping itself
// must be unique; keys merged in with << fill in only what is not set yet
// (the earlier merge wins), as YAML merge keys do.
func (d *specDecoder) mapping(n *yaml.Node, t reflect.Type, path string, depth int, out map[string]any) error {
	var fields []jsonField
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	explicit := map[string]int{} // key -> line
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMergeKey(kn) {
			merges = append(merges, vn)
			continue
		}
		k, err := d.key(kn)
		if err != nil {
			return err
		}
		if line, ok := explicit[k]; ok {
			in := ""
			if path != "" {
				in = " in " + path
			}
			return fmt.Errorf("parse %s: line %d: key %q already set in map%s (first at line %d)", d.what, kn.Line, k, in, line)
		}
		explicit[k] = kn.Line
		v, err := d.field(vn, t, fields, path, k, depth)
		if err != nil {
			return err
		}
		out[k] = v
	}
	for _, m := range merges {
		if err := d.merge(m, t, path, depth, out); err != nil {
			return err
		}
	}
	return nil
}

// field converts the value of key k of a mapping of type t.
func (d *specDecoder) field(vn *yaml.Node, t reflect.Type, fields []jsonField, path, k string, depth int) (any, error) {
	switch {
	case fields != nil:
		f, ok := lookupField(fields, k)
		if !ok {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.name
			}
			msg := "is not a known field"
			if near := suggest.Nearest(k, names); near != "" {
				msg += " (did you mean " + near + "?)"
			}
			return nil, &FieldError{Field: at(path, k), Msg: msg + ": use " + strings.Join(names, ", ")}
		}
		return d.value(vn, t.FieldByIndex(f.index).Type, at(path, k), depth+1)
	case t != nil && t.Kind() == reflect.Map:
		return d.value(vn, t.Elem(), key(path, k), depth+1)
	case t != nil && t.Kind() == reflect.Struct:
		// A struct without JSON fields takes none.
		return nil, &FieldError{Field: at(path, k), Msg: "is not a known field"}
	}
	return d.value(vn, nil, at(path, k), depth+1)
}

// merge folds the mapping (or list of mappings) m, given to a << key, into
// out without replacing keys already there.
func (d *specDecoder) merge(m *yaml.Node, t reflect.Type, path string, depth int, out map[string]any) error {
	if depth > maxSpecDepth {
		return fmt.Errorf("%s: line %d: it nests deeper than %d levels", d.what, m.Line, maxSpecDepth)
	}
	switch {
	case m.Kind == yaml.AliasNode:
		return d.merge(m.Alias, t, path, depth+1, out)
	case m.Kind == yaml.MappingNode:
		in := map[string]any{}
		if err := d.mapping(m, t, path, depth+1, in); err != nil {
			return err
		}
		for k, v := range in {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
		return nil
	case m.Kind == yaml.SequenceNode:
		for _, c := range m.Content {
			r := c
			for r.Kind == yaml.AliasNode {
				r = r.Alias
			}
			if r.Kind != yaml.MappingNode {
				return fmt.Errorf("%s: line %d: << merges a mapping or a list of mappings", d.what, c.Line)
			}
			if err := d.merge(c, t, path, depth+1, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: line %d: << merges a mapping or a list of mappings", d.what, m.Line)
}

// isMergeKey reports whether k is the merge key: << unquoted, or !!merge.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" &&
		(k.Style&yaml.TaggedStyle != 0 || k.Style&quotedStyles == 0 && k.Value == "<<")
}

// key returns a mapping key as written. Keys are text: {1: a, yes: b} has
// keys "1" and "yes".
func (d *specDecoder) key(k *yaml.Node) (string, error) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s: line %d: a mapping key must be text, not a mapping or list", d.what, k.Line)
	}
	if k.Style&yaml.TaggedStyle != 0 && !coreTag(k) {
		return "", fmt.Errorf("%s: line %d: the tag %s is not supported: write plain YAML or JSON values", d.what, k.Line, k.Tag)
	}
	return k.Value, nil
}

const quotedStyles = yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle

// coreTag reports whether n's explicit tag is one of the YAML 1.2 core
// schema's and fits the node.
func coreTag(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		return n.Tag == "!!map"
	case yaml.SequenceNode:
		return n.Tag == "!!seq"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!merge":
			return true
		}
	}
	return false
}

// YAML 1.2 core schema scalars (plus JSON's, which they include). Numbers
// are decimal only: see the package comment above.
var (
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	radixInt  = regexp.MustCompile(`^[-+]?0[xXoObB][0-9a-fA-F_]*$`)
)

// plainKind resolves a scalar as the YAML 1.2 core schema does: "null",
// "bool", "int", "float", "nan", "inf", "-inf" or "string". Quoted and block
// scalars are strings; explicit core tags are honoured.
func plainKind(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle != 0 && n.Tag == "!!str" {
		return "string"
	}
	if n.Style&quotedStyles != 0 && n.Style&yaml.TaggedStyle == 0 {
		return "string"
	}
	switch s := n.Value; {
	case s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL":
		return "null"
	case s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE":
		return "bool"
	case coreInt.MatchString(s):
		return "int"
	case coreFloat.MatchString(s):
		return "float"
	case s == ".nan" || s == ".NaN" || s == ".NAN":
		return "nan"
	case s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF":
		return "inf"
	case s == "-.inf" || s == "-.Inf" || s == "-.INF":
		return "-inf"
	}
	return "string"
}

// tagFits reports whether an explicitly tagged scalar's value has its tag's
// kind (!!str fits anything).
func tagFits(tag, kind string) bool {
	switch tag {
	case "!!null":
		return kind == "null"
	case "!!bool":
		return kind == "bool"
	case "!!int":
		return kind == "int"
	case "!!float":
		return kind == "int" || kind == "float" || kind == "nan" || kind == "inf" || kind == "-inf"
	}
	return true
}

// scalar converts a scalar for a field of type t.
func (d *specDecoder) scalar(n *yaml.Node, t reflect.Type, path string) (any, error) {
	kind := plainKind(n)
	if n.Style&yaml.TaggedStyle != 0 && !tagFits(n.Tag, kind) {
		return nil, fmt.Errorf("%s: line %d: %q is not a valid %s", d.what, n.Line, n.Value, n.Tag)
	}
	if kind == "null" {
		return nil, nil
	}
	var tk reflect.Kind
	if t != nil {
		tk = t.Kind()
	}
	isInt := tk >= reflect.Int && tk <= reflect.Uint64
	isNum := isInt || tk == reflect.Float32 || tk == reflect.Float64
	switch {
	case kind == "nan" || kind == "inf" || kind == "-inf":
		if tk == reflect.String && t != quantityType {
			return n.Value, nil // a string field takes .nan as written
		}
		return nil, nonFinite(path, kind)
	case t == quantityType:
		// Quantities keep the text as written ("48", "1e3", "500m").
		if kind == "bool" {
			return nil, mismatch(path, "(a bool)", t)
		}
		return n.Value, nil
	case tk == reflect.String:
		return n.Value, nil // as written: on, no, yes, 010 stay text
	case t == nil || tk == reflect.Interface:
		switch kind {
		case "bool":
			return n.Value[0] == 't' || n.Value[0] == 'T', nil
		case "int", "float":
			return json.Number(jsonNumber(n.Value)), nil
		}
		return n.Value, nil
	case kind == "bool" && tk == reflect.Bool:
		return n.Value[0] == 't' || n.Value[0] == 'T', nil
	case kind == "bool":
		return nil, mismatch(path, "(a bool)", t)
	case (kind == "int" || kind == "float") && isInt:
		return wholeNumber(path, n.Value, t)
	case kind == "int" || kind == "float":
		if isNum {
			return json.Number(jsonNumber(n.Value)), nil
		}
		return nil, mismatch(path, n.Value, t)
	case isNum && radixInt.MatchString(n.Value):
		return nil, bad(path, n.Value, "write numbers in decimal")
	}
	return nil, mismatch(path, "(a string)", t)
}

// mismatch says that value (as written, or "(a bool)") does not fit a field
// of type t.
func mismatch(path, value string, t reflect.Type) error {
	return &FieldError{Field: path, Msg: value + " is not allowed: " + wantType(t)}
}

// nonFinite is the error for .nan and .inf where a number is expected.
func nonFinite(path, kind string) error {
	v := map[string]string{"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[kind]
	return &FieldError{Field: path, Msg: v + " is not allowed: use a finite number"}
}

// wholeNumber converts a decimal number for an integer field of type t:
// 010 is 10 and 2.0 or 2e3 are whole; fractions and what t cannot hold are
// refused. The exponent is only ever compared, never raised, so 1e999999999
// costs nothing.
func wholeNumber(path, s string, t reflect.Type) (any, error) {
	num := jsonNumber(s)
	neg := strings.HasPrefix(num, "-")
	mant, exp, _ := strings.Cut(strings.TrimPrefix(strings.ToLower(num), "-"), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	e := 0
	if exp != "" {
		var err error
		if e, err = strconv.Atoi(exp); err != nil || e > 1<<20 || e < -(1<<20) {
			e = 1 << 20
			if strings.HasPrefix(exp, "-") {
				e = -e
			}
		}
	}
	// The value is 0.digits × 10^point.
	digits, point := whole+frac, len(whole)+e
	for len(digits) > 0 && digits[0] == '0' {
		digits, point = digits[1:], point-1
	}
	digits = strings.TrimRight(digits, "0")
	bits := t.Bits()
	switch {
	case digits == "":
		return json.Number("0"), nil
	case point < len(digits):
		return nil, bad(path, numberValue(s), "use a whole number")
	case point > 20:
		return nil, bad(path, numberValue(s), "use a whole number that fits in %d bits", bits)
	}
	b, _ := new(big.Int).SetString(digits+strings.Repeat("0", point-len(digits)), 10)
	if neg {
		b.Neg(b)
	}
	lo, hi := new(big.Int), new(big.Int)
	if t.Kind() >= reflect.Uint {
		hi.Lsh(big.NewInt(1), uint(bits)).Sub(hi, big.NewInt(1))
	} else {
		hi.Lsh(big.NewInt(1), uint(bits-1)).Sub(hi, big.NewInt(1))
		lo.Neg(hi).Sub(lo, big.NewInt(1))
	}
	if b.Cmp(lo) < 0 || b.Cmp(hi) > 0 {
		return nil, bad(path, numberValue(s), "use a whole number that fits in %d bits", bits)
	}
	return json.Number(b.String()), nil
}

// numberValue makes a number print unquoted in bad's messages.
type numberValue string

func (n numberValue) String() string { return string(n) }

// jsonNumber rewrites a YAML 1.2 decimal number in JSON syntax: no leading
// +, no leading zeros, digits on both sides of a point ("+010" -> "10",
// ".5" -> "0.5", "1." -> "1").
func jsonNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mant, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(s, "E")
	}
	whole, frac, _ := strings.Cut(mant, ".")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(whole)
	if frac != "" {
		b.WriteString("." + frac)
	}
	if hasExp {
		b.WriteString("e" + exp)
	}
	return b.String()
}

// decodeError rewrites an encoding/json error so it names the field.
func decodeError(what string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return typeError(te)
	}
	if te != nil {
		return fmt.Errorf("%s is a YAML or JSON %s: write a mapping of fields", what, te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return fmt.Errorf("parse %s: %s", what, strings.Join(strings.Fields(msg), " "))
}

// typeError turns a JSON type mismatch into a FieldError.
func typeError(te *json.UnmarshalTypeError) error {
	v, isNum := strings.CutPrefix(te.Value, "number ")
	if !isNum {
		v = "(a " + yamlKind(te.Value) + ")"
	}
	return &FieldError{Field: te.Field, Msg: v + " is not allowed: " + wantType(te.Type)}
}

// yamlKind names a JSON value kind as a spec's writer knows it: a
// mapping and a list, not an object and an array.
func yamlKind(v string) string {
	switch v {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return v
}

// wantType says what a field of type t takes.
func wantType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "use a whole number"
	case reflect.String:
		return "use a string"
	case reflect.Bool:
		return "use true or false"
	case reflect.Slice, reflect.Array:
		return "use a list"
	case reflect.Map, reflect.Struct:
		return "use a mapping"
	}
	return "use a value of type " + t.String()
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
