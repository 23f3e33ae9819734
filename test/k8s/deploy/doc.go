// Package deploy holds the test that applies every manifest under deploy/
// to a real API server (test/k8s/k8stest) with server-side apply.
package deploy
