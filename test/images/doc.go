// Package images holds the checks of images/ that run without a Docker
// engine: each Dockerfile parses into stages, builds from source with Go
// 1.26, copies only files the repository has, and ends with the right
// ENTRYPOINT.
package images
