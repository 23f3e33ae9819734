package k8stest

import "context"

// Import is ImportImage for callers without a testing.TB (bench
// programs): it imports the image in archive into the node's containerd
// as ref and returns once the CRI plugin lists it.
func (n *RealNode) Import(ctx context.Context, archive, ref string) error {
	return n.importImage(ctx, archive, ref)
}
