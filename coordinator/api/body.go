package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// readBody reads r's body, refusing bodies over limit bytes, empty bodies
// and bad UTF-8 with a message that says what is allowed. what names the
// expected content ("a job spec in YAML or JSON").
func readBody(r *http.Request, limit int64, what string) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errorf(http.StatusBadRequest, "request body is %d bytes: send %s of at most %d bytes", r.ContentLength, what, limit)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "read request body: %v", err)
	}
	switch {
	case int64(len(b)) > limit:
		return nil, errorf(http.StatusBadRequest, "request body is over %d bytes: send %s of at most %d bytes", limit, what, limit)
	case len(bytes.TrimSpace(b)) == 0:
		return nil, emptyBody(what)
	case !utf8.Valid(b):
		return nil, errorf(http.StatusBadRequest, "request body is not valid UTF-8 (first bad byte at offset %d): send %s as UTF-8 text", badUTF8(b), what)
	}
	return b, nil
}

// emptyBody is the error for a body that holds nothing to decode.
func emptyBody(what string) error {
	return errorf(http.StatusBadRequest, "request body is empty: send %s", what)
}

// readSpec reads a spec body of the kind what names ("job spec") and
// decodes it with parse. A body of nothing but whitespace, comments, a
// byte-order mark or document markers is as empty as one of 0 bytes and
// is answered alike; what else is wrong, parse says (a 400).
func readSpec[T any](r *http.Request, what string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := readBody(r, structs.MaxSpecBytes, structs.SpecWanted(what))
	if err != nil {
		return zero, err
	}
	v, err := parse(b)
	var none *structs.NoSpecError
	var he *httpError
	switch {
	case errors.As(err, &none) && none.Null == "":
		return zero, emptyBody(structs.SpecWanted(what))
	case errors.As(err, &he):
		return zero, err
	case err != nil:
		return zero, errorf(http.StatusBadRequest, "%v", err)
	}
	return v, nil
}

func badUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// decodeJSON reads a small JSON object body into v strictly: unknown
// fields, trailing data and non-objects are refused.
func decodeJSON(r *http.Request, v any, what string) error {
	return decodeJSONLimit(r, v, what, maxSmallBody)
}

// decodeJSONLimit is decodeJSON for bodies of up to limit bytes.
func decodeJSONLimit(r *http.Request, v any, what string, limit int64) error {
	b, err := readBody(r, limit, what)
	if err != nil {
		return err
	}
	fields := jsonFieldNames(reflect.TypeOf(v).Elem())
	if t := bytes.TrimSpace(b); t[0] != '{' {
		return errorf(http.StatusBadRequest, "request body is not a JSON object: send %s with the fields %s", what, fields)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			msg = fmt.Sprintf("%s is a JSON %s that does not fit: use a %s", te.Field, te.Value, te.Type)
		}
		return errorf(http.StatusBadRequest, "%s: %s (the fields are %s)", what, msg, fields)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "%s: data after the JSON object: send one object", what)
	}
	return nil
}

// jsonFieldNames lists t's JSON field names, for messages.
func jsonFieldNames(t reflect.Type) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// requestID returns the client's request ID from the Idempotency-Key
// header or the requestID query parameter ("" when neither is given).
func requestID(r *http.Request) (string, error) {
	h := r.Header.Get(wire.HeaderIdempotencyKey)
	q := r.URL.Query().Get(wire.QueryRequestID)
	id := h
	switch {
	case h != "" && q != "" && h != q:
		return "", errorf(http.StatusBadRequest, "the %s header %q and the %s parameter %q differ: give one request ID", wire.HeaderIdempotencyKey, h, wire.QueryRequestID, q)
	case h == "":
		id = q
	}
	if id == "" {
		return "", nil
	}
	if len(id) > wire.MaxRequestIDLen || strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r))
	}) >= 0 {
		return "", errorf(http.StatusBadRequest, "request ID %q is not allowed: use 1 to %d letters, digits, '-', '_', '.' or ':'", trunc(id), wire.MaxRequestIDLen)
	}
	return id, nil
}

// trunc shortens s for a message.
func trunc(s string) string {
	if len(s) > 70 {
		return s[:64] + "..."
	}
	return s
}

// objectName checks a pool or cluster name from the path: a DNS-1123
// label, as the specs require.
func objectName(what, name string) error {
	if err := structs.ValidateObjectName(what+" name", name); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	return nil
}

// nodeName checks a node name from the path: a DNS-1123 subdomain.
func nodeName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return errorf(http.StatusBadRequest, "node name %q is not allowed: use a DNS-1123 subdomain: %s", trunc(name), structs.ValidationText(errs))
	}
	return nil
}

// nameMatches refuses a body whose name differs from the path's.
func nameMatches(what, inBody, inPath string) error {
	if inBody != inPath {
		return errorf(http.StatusBadRequest, "%s %q in the body does not match %q in the path: they must be the same", what, trunc(inBody), trunc(inPath))
	}
	return nil
}

// parseClusterSpec decodes one cluster spec (name, backend, redis) with
// the decoding and checks structs applies to cluster configs: the spec's
// YAML node is wrapped, unchanged, in a config of one cluster, and that
// wrapping is stripped from the messages.
func parseClusterSpec(body []byte) (*structs.Cluster, error) {
	root, err := structs.SpecRoot(body, "cluster spec")
	if err != nil {
		return nil, err
	}
	// Refuse deep nesting before re-encoding: the encoder indents each
	// level, so a deeply nested spec would grow several times over.
	if deeper(root, maxClusterSpecDepth) {
		return nil, errorf(http.StatusBadRequest, "cluster spec nests deeper than %d levels: write the fields name, backend, redis, kubeconfig, namespace, image, qps, burst, heartbeatPods, serviceAccount and topology", maxClusterSpecDepth)
	}
	wrapped := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "clusters"},
		{Kind: yaml.SequenceNode, Content: []*yaml.Node{root}},
	}}
	text, err := yaml.Marshal(wrapped)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "parse cluster spec: %v", err)
	}
	cfg, err := structs.ParseClusterConfig(text)
	if err != nil {
		var fe *structs.FieldError
		if errors.As(err, &fe) {
			return nil, &structs.FieldError{Field: strings.TrimPrefix(strings.TrimPrefix(fe.Field, "clusters[0]"), "."), Msg: fe.Msg}
		}
		msg := strings.ReplaceAll(err.Error(), "cluster config", "cluster spec")
		return nil, errorf(http.StatusBadRequest, "%s", strings.ReplaceAll(msg, "clusters[0].", ""))
	}
	if len(cfg.Clusters) != 1 {
		return nil, errorf(http.StatusBadRequest, "cluster spec: give one cluster")
	}
	return &cfg.Clusters[0], nil
}

// maxClusterSpecDepth bounds the nesting of a cluster spec, whose fields
// are all scalars.
const maxClusterSpecDepth = 8

// deeper reports whether n nests more than limit levels.
func deeper(n *yaml.Node, limit int) bool {
	if limit < 0 {
		return true
	}
	for _, c := range n.Content {
		if deeper(c, limit-1) {
			return true
		}
	}
	return false
}
