package structs

// Value checks shared by the specs: printable text, quantities, durations
// and ranges.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
)

// checkText walks v and refuses any string (or map key) holding control
// characters or U+FFFD, which stands in for invalid UTF-8 after decoding.
// Fields tagged `spec:"multiline"` (command, args, env values) may also hold
// tabs, newlines and carriage returns, as shell scripts do.
func checkText(v reflect.Value, path string, multiline bool) error {
	switch v.Kind() {
	case reflect.String:
		return checkString(path, v.String(), multiline)
	case reflect.Pointer:
		if !v.IsNil() {
			return checkText(v.Elem(), path, multiline)
		}
	case reflect.Struct:
		t := v.Type()
		for _, f := range jsonFields(t) {
			sf := t.FieldByIndex(f.index)
			err := checkText(v.FieldByIndex(f.index), at(path, f.name), sf.Tag.Get("spec") == "multiline")
			if err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := checkText(v.Index(i), idx(path, i), multiline); err != nil {
				return err
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			if err := checkString(path+" key", k.String(), false); err != nil {
				return err
			}
			if err := checkText(v.MapIndex(k), key(path, k.String()), multiline); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkString is checkText for one string.
func checkString(field, s string, multiline bool) error {
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			return bad(field, s, "it holds U+FFFD, the mark of invalid UTF-8: use valid UTF-8 text")
		case multiline && (r == '\t' || r == '\n' || r == '\r'):
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			// Bidi controls (U+202E ...) make a command read otherwise
			// than it runs (Trojan Source): refused like the C0/C1 ones.
			if multiline {
				return bad(field, s, "use printable text, tabs and newlines only (no control characters)")
			}
			return bad(field, s, "use printable text only (no control characters)")
		}
	}
	return nil
}

// Quantity is an amount as written in a spec, in Kubernetes quantity syntax:
// "500m" (millicores), "4" (cores), "944Gi" (bytes), "1.5e9". JSON and YAML
// numbers are accepted too (cpu: 56) and kept as written.
type Quantity string

// UnmarshalJSON accepts a JSON string or number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*q = Quantity(s)
		return nil
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*q = Quantity(b)
		return nil
	}
	kind := "value"
	if len(b) > 0 {
		kind = map[byte]string{'t': "bool", 'f': "bool", '{': "object", '[': "array"}[b[0]]
	}
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[Quantity]()}
}

// quantityShape bounds the syntax before resource.ParseQuantity sees it:
// at most 3 exponent digits, since the parser's cost grows with 10^exponent.
var quantityShape = regexp.MustCompile(`^[+-]?[0-9.]{1,40}([eE][+-]?[0-9]{1,3}|[numkMGTPE]|[KMGTPE]i)?$`)

// unitValue converts q to whole units of 1/perUnit (1000 for millicores,
// 1 for bytes or counts). It refuses what is not a quantity, negative values,
// fractions of the unit and values that do not fit below math.MaxInt64
// (resource.ParseQuantity caps binary-suffixed values at MaxInt64, so that
// value itself is treated as an overflow). unit names the unit in messages.
func unitValue(field string, q Quantity, perUnit int64, unit string) (int64, error) {
	s := strings.TrimSpace(string(q))
	if !quantityShape.MatchString(s) {
		return 0, bad(field, q, "use a quantity such as %s", quantityExample(unit))
	}
	rq, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, bad(field, q, "use a quantity such as %s", quantityExample(unit))
	}
	if rq.Sign() < 0 {
		return 0, bad(field, q, "use 0 or more")
	}
	d := rq.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs32(int32(d.Scale())))), nil)
	if d.Scale() > 0 {
		r.Quo(r, new(big.Rat).SetInt(scale))
	} else {
		r.Mul(r, new(big.Rat).SetInt(scale))
	}
	r.Mul(r, new(big.Rat).SetInt64(perUnit))
	if !r.IsInt() {
		return 0, bad(field, q, "use whole %s", unit)
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() == math.MaxInt64 {
		if unit == "millicores" { // say it in the unit the writer used
			return 0, bad(field, q, "it overflows 64 bits: use at most %d cores", int64(math.MaxInt64)/perUnit)
		}
		return 0, bad(field, q, "it overflows 64 bits: use less than %d %s", int64(math.MaxInt64), unit)
	}
	return n.Int64(), nil
}

// quantityExample shows valid quantities of unit in messages: memory
// with a unit (a bare number is bytes), cpu in cores or millicores.
func quantityExample(unit string) string {
	switch unit {
	case "millicores":
		return "500m or 4"
	case "bytes":
		return "512Mi or 16Gi (a bare number is bytes)"
	}
	return "8"
}

// milliCPUValue converts a cpu quantity to millicores.
func milliCPUValue(field string, q Quantity) (int64, error) {
	return unitValue(field, q, 1000, "millicores")
}

// MinMemory is the least memory a job, node or quota may give above 0:
// below it no process runs, and a bare number (bytes) meant as MiB is the
// likely mistake.
const MinMemory = 1 << 20

// memoryValue converts a memory quantity to bytes, as unitValue does, and
// refuses one above 0 and below MinMemory, suggesting MiB for a bare
// number. Job specs, node specs and quota limits all read memory through
// it, so each refuses "memory: 16" with the same words.
func memoryValue(field string, q Quantity) (int64, error) {
	v, err := unitValue(field, q, 1, "bytes")
	if err != nil || v <= 0 || v >= MinMemory {
		return v, err
	}
	s := strings.TrimSpace(string(q))
	msg := fmt.Sprintf("%s is too small: use at least %s", s, FormatBytes(MinMemory))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if b := FormatBytes(v); b != s {
			s += " (" + b + ")"
		}
		msg = fmt.Sprintf("%s is too small: memory is in bytes unless it has a unit; did you mean %dMi?", s, n)
	}
	return 0, &FieldError{Field: field, Msg: msg}
}

func abs32(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

// Bounds on downgradeAfter and pendingTimeout.
const (
	MinSpecDuration = time.Second
	MaxSpecDuration = 7 * 24 * time.Hour
)

// parseDuration parses a Go duration ("30m", "1h30m") from MinSpecDuration
// to MaxSpecDuration.
func parseDuration(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < MinSpecDuration || d > MaxSpecDuration {
		return 0, bad(field, s, "use a duration such as 90s, 30m or 2h, from 1s to 168h (7 days)")
	}
	return d, nil
}

// checkRange refuses n outside [lo, hi].
func checkRange(field string, n, lo, hi int64, unit string) error {
	if n < lo || n > hi {
		return bad(field, n, "use %d to %d%s", lo, hi, unit)
	}
	return nil
}

// noOverflow refuses a per-replica amount per (written as value) whose
// total over n replicas does not fit in an int64.
func noOverflow(field string, value any, per, n int64) error {
	if n > 0 && per > math.MaxInt64/n {
		return bad(field, value, "times %d replicas it overflows 64 bits: ask for less", n)
	}
	return nil
}
