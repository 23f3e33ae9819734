#!/bin/sh
# /app/atom in the Spark image: atom itself (/app/atom-agent), except for
# the Pods Spark's Kubernetes backend creates on its own: their container
# gets only Spark's arguments (executor; driver in cluster mode) and
# expects the image's entrypoint to be Spark's, so those go to
# /opt/entrypoint.sh (images/spark/entrypoint.sh), as in apache/spark.
case "${1:-}" in
driver | executor) exec /opt/entrypoint.sh "$@" ;;
esac
exec /app/atom-agent "$@"
