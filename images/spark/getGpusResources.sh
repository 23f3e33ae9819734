#!/bin/sh
# Spark's GPU discovery script, where Spark's own images keep theirs
# (spark.{driver,executor}.resource.gpu.discoveryScript's default in atom):
# atom lists the GPUs the container has, checked as its preflight checks
# them, as the JSON Spark expects ({"name":"gpu","addresses":["0",...]}).
exec /app/atom-agent gpus --spark
