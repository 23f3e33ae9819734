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
