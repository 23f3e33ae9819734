// Package suggest finds what a mistyped name was meant to be, for the
// "did you mean" of a refusal: the CLIs' flags and the spec's fields.
package suggest

import "github.com/xrash/smetrics"

// floor is the least Jaro-Winkler similarity that counts as meant:
// urfave/cli's own suggestion has none, so it names something for any
// typo, however far.
const floor = 0.8

// Nearest returns the one of names nearest name, if one is near enough
// to be what was meant (the first of equals), else "".
func Nearest(name string, names []string) string {
	best, score := "", 0.0
	for _, n := range names {
		if s := smetrics.JaroWinkler(name, n, 0.7, 4); n != name && s >= floor && s > score {
			best, score = n, s
		}
	}
	return best
}
