// Package docs checks the repository's Markdown documents against the
// repository: every relative link (and its #anchor) resolves, and every
// job spec, mpi or spark section and cluster config they show is one the
// code accepts, and every coordinator command and make target they show
// exists.
package docs
