package taskenv

// EnvTLSCA carries, to a task whose coordinator serves HTTPS, the PEM text
// of the CA that signed the coordinator's certificate: atom trusts it for
// every request to the coordinator (pkg/client.EnvTLSCA).
const EnvTLSCA = "ATOM_TLS_CA"

// TLS is the environment that lets a task's atom reach a coordinator
// serving HTTPS: caPEM in ATOM_TLS_CA. It is empty for plain HTTP.
func TLS(caPEM string) map[string]string {
	if caPEM == "" {
		return map[string]string{}
	}
	return map[string]string{EnvTLSCA: caPEM}
}
