package structs

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validName reports whether s is a valid type name (accelerator or device
// type): 1 to 63 characters of letters, digits, '-', '_' or '.', starting and
// ending with a letter or digit (a Kubernetes label value).
func validName(s string) bool {
	return s != "" && len(validation.IsValidLabelValue(s)) == 0
}

// ValidateTypeName returns an error naming field if s is not a valid
// accelerator or device type name.
func ValidateTypeName(field, s string) error {
	if !validName(s) {
		return fmt.Errorf("%s %q is not allowed: use 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", field, s)
	}
	return nil
}

// CaseTwin returns the name in have that equals t when case is ignored
// but not otherwise ("A100" for "a100"), or "" when there is none. Types
// are case-sensitive: a100 and A100 are different types, and writing one
// for the other is a typo that would match nothing.
func CaseTwin(have []string, t string) string {
	for _, h := range have {
		if h != t && strings.EqualFold(h, t) {
			return h
		}
	}
	return ""
}

// Nearest returns the name in have that t most likely misspells, or "":
// one equal to t but for case, '-' and '_' ("onfailure", "on-failure"
// for OnFailure), else the single nearest at most two edits away
// (insertions, deletions, substitutions), when t is long enough for two
// edits to leave it recognisable.
func Nearest(have []string, t string) string {
	fold := func(s string) string { return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s)) }
	for _, h := range have {
		if h != t && fold(h) == fold(t) {
			return h
		}
	}
	best, bestD, ties := "", 3, 0
	for _, h := range have {
		if h == t {
			return ""
		}
		switch d := editDistance(strings.ToLower(h), strings.ToLower(t)); {
		case d < bestD:
			best, bestD, ties = h, d, 1
		case d == bestD:
			ties++
		}
	}
	if ties != 1 || len(t) <= 2*bestD {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ValidateObjectName returns an error naming field if s is not a DNS-1123
// label (lowercase letters, digits and '-', at most 63 characters), the
// form Kubernetes requires of the names atom derives objects from.
func ValidateObjectName(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s is required: use lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 (e.g. my-name)", field)
	}
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return fmt.Errorf("%s %q is not allowed: %s", field, s, ValidationText(errs))
	}
	return nil
}

// kubeRegex is the regular expression Kubernetes' validation messages
// end with, which says nothing their words do not.
var kubeRegex = regexp.MustCompile(`, regex used for validation is '[^']*'`)

// ValidationText joins Kubernetes validation messages for a person: without
// the regular expression they end with, or their double spaces.
func ValidationText(errs []string) string {
	out := make([]string, len(errs))
	for i, e := range errs {
		e = strings.ReplaceAll(kubeRegex.ReplaceAllString(e, ""), ",  or ", " or ")
		for strings.Contains(e, "  ") {
			e = strings.ReplaceAll(e, "  ", " ")
		}
		out[i] = e
	}
	return strings.Join(out, "; ")
}
