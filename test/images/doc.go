// Package images checks images/ without a Docker engine: each Dockerfile,
// read, builds its binary from source with Go 1.26 or takes the one
// images/build.sh builds on the host (ATOM_FROM), copies only files the
// repository has and ends with the right ENTRYPOINT; Spark's entrypoint
// scripts start executors as Spark's own image does; and the images, built
// as make images builds them (buildah, imagestest.Ensure), hold what they
// should and run it.
package images
