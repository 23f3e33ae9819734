package structs

// The text the YAML parser reads. The parser (go.yaml.in/yaml/v3, a port
// of libyaml) refuses two things YAML 1.2 allows and users write; they
// are made readable here without changing what the spec says:
//
//   - A %YAML 1.2 directive: the parser takes only %YAML 1.1. A spec is
//     read as YAML 1.2 whatever its directive says (spec_decode.go), so
//     the parser is given 1.1 for 1.2. Other versions are refused, naming
//     the line.
//   - A line of only spaces and tabs, as editors leave: YAML 1.2 reads it
//     as an empty line (a comment line without a comment, or a line break
//     within a quoted or plain scalar), but the parser reads a tab on it
//     as indentation and refuses the text. So text that does not parse as
//     written is parsed once more with those lines emptied; text that
//     parses as written is never changed. Within a block scalar (| or >)
//     a line is text from the scalar's indentation on, and indentation is
//     spaces: there such a line that starts with a tab is no text and
//     becomes an empty line of the scalar, but one that starts with a
//     space may be text, so it is not emptied silently: the spec is
//     refused, naming the line.

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

var (
	bom           = []byte("\ufeff")
	yamlDirective = regexp.MustCompile(`^%YAML[ \t]+([0-9]+)\.([0-9]+)(?:[ \t]|$)`)
)

// parserText returns data as the parser is to read it: a %YAML 1.2
// directive given as %YAML 1.1. It refuses a %YAML directive for another
// version than these. data is not changed.
func parserText(data []byte, what string) ([]byte, error) {
	offset := 0
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		at := offset
		offset += len(line)
		if i == 0 && bytes.HasPrefix(line, bom) {
			line, at = line[len(bom):], at+len(bom)
		}
		t := bytes.TrimSpace(line)
		switch {
		case len(t) == 0 || t[0] == '#':
			continue
		case line[0] != '%':
			return data, nil // directives come before the document
		}
		m := yamlDirective.FindSubmatchIndex(bytes.TrimRight(line, "\r\n"))
		if m == nil {
			continue // another directive (%TAG), or one the parser refuses, naming it
		}
		major, minor := string(line[m[2]:m[3]]), string(line[m[4]:m[5]])
		switch major + "." + minor {
		case "1.1":
		case "1.2":
			data = bytes.Clone(data)
			data[at+m[4]] = '1'
		default:
			return nil, fmt.Errorf("parse %s: line %d: %%YAML %s.%s is not allowed: write %%YAML 1.2, or no directive", what, i+1, major, minor)
		}
	}
	return data, nil
}

// withoutTabLines parses text again with its lines of only spaces and
// tabs, a tab among them, emptied, when it holds any; err is what parsing
// it as written said, and is returned when it holds none.
func withoutTabLines(text []byte, what string, err error) (*yaml.Node, error) {
	lines := bytes.SplitAfter(text, []byte("\n"))
	var emptied, spaced []int // line numbers; spaced: those that start with a space
	out := make([]byte, 0, len(text))
	for i, line := range lines {
		body := bytes.TrimRight(line, "\r\n")
		if i == 0 && bytes.HasPrefix(body, bom) {
			out, body = append(out, bom...), body[len(bom):]
			line = line[len(bom):]
		}
		if len(bytes.Trim(body, " \t")) > 0 || bytes.IndexByte(body, '\t') < 0 || len(line)-len(body) > 2 {
			out = append(out, line...)
			continue
		}
		out = append(out, line[len(body):]...) // the line break
		emptied = append(emptied, i+1)
		if body[0] == ' ' {
			spaced = append(spaced, i+1)
		}
	}
	if len(emptied) == 0 {
		return nil, err
	}
	root, err := document(out, what)
	if err != nil {
		return nil, err
	}
	if line, scalar := inBlockScalar(root, spaced); line > 0 {
		return nil, fmt.Errorf("parse %s: line %d holds only spaces and tabs, within the block scalar (| or >) of line %d, where they may be text: "+
			"empty the line, or indent it with spaces only (YAML takes no tab as indentation)", what, line, scalar)
	}
	return root, nil
}

// inBlockScalar returns the first of lines (numbers from 1, ascending)
// that lies after the start of a block scalar in root and before the
// next node, and that scalar's line; 0, 0 if none does.
func inBlockScalar(root *yaml.Node, lines []int) (line, scalar int) {
	if root == nil || len(lines) == 0 {
		return 0, 0
	}
	var starts, blocks []int
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		starts = append(starts, n.Line)
		if n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			blocks = append(blocks, n.Line)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	slices.Sort(starts)
	for _, l := range lines {
		for _, b := range blocks {
			i, _ := slices.BinarySearch(starts, b+1) // the first node after the scalar's line
			if l > b && (i == len(starts) || l < starts[i]) {
				return l, b
			}
		}
	}
	return 0, 0
}
