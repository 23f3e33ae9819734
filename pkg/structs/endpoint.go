package structs

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// MaxEndpointLen bounds a task endpoint.
const MaxEndpointLen = 255

// CheckEndpoint returns a *FieldError (field "endpoint") unless s is a
// task endpoint peers can dial: "host:port" with port 1 to 65535 and host
// an IP address (IPv6 in brackets) or a DNS name, at most 255 bytes. The
// unspecified address (0.0.0.0, [::]) is refused: it is where a server
// listens, not where others reach it.
func CheckEndpoint(s string) error {
	const want = `use host:port with port 1-65535 and host an IP address ([v6] in brackets) or a DNS name, at most 255 bytes, e.g. "10.0.3.7:7070"`
	if len(s) > MaxEndpointLen {
		return &FieldError{Field: "endpoint", Msg: "of " + strconv.Itoa(len(s)) + " bytes is not allowed: " + want}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || !validPort(port) || host == "" {
		return bad("endpoint", s, want)
	}
	if strings.HasPrefix(s, "[") || strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return bad("endpoint", s, want)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.IsUnspecified() {
			return bad("endpoint", s, "report an address the job's other tasks can reach, not the unspecified address")
		}
		return nil
	}
	if !validDNSName(host) {
		return bad("endpoint", s, want)
	}
	return nil
}

func validPort(p string) bool {
	if p == "" || len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(p)
	return n >= 1 && n <= 65535
}

// validDNSName: dot-separated labels of 1-63 letters, digits and '-', not
// starting or ending with '-'; at most 253 bytes; the last label not all
// digits (so "1.2.3.999" is a bad address, not a name).
func validDNSName(h string) bool {
	labels := strings.Split(h, ".")
	if len(h) > 253 || strings.TrimLeft(labels[len(labels)-1], "0123456789") == "" {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
