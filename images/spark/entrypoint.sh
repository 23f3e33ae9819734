#!/bin/bash
# /opt/entrypoint.sh in atom's Spark image (images/spark/Dockerfile): runs
# what Spark's Kubernetes backend asks of a Pod it made, given as the
# container's arguments, the way Apache Spark's own image does, on the
# Spark that pip's pyspark installs ($SPARK_HOME):
#   executor  an executor: KubernetesExecutorBackend, configured by the
#             SPARK_* variables Spark sets on the Pod (SPARK_DRIVER_URL,
#             SPARK_EXECUTOR_ID, _CORES, _MEMORY, _POD_IP, _POD_NAME,
#             SPARK_APPLICATION_ID, SPARK_RESOURCE_PROFILE_ID, and its JVM
#             options as SPARK_JAVA_OPT_0, _1, ...);
#   driver    a cluster-mode driver: spark-submit in client mode, bound to
#             SPARK_DRIVER_BIND_ADDRESS.
# Anything else is run as given. /app/atom (atom.sh) hands executor and
# driver here; atom's own driver task runs spark-submit directly.
set -eo pipefail

: "${SPARK_HOME:=/opt/spark}"
java=java
if [ -n "${JAVA_HOME:-}" ]; then
	java=$JAVA_HOME/bin/java
fi

# The classpath: Spark's configuration, its jars, what the job adds, the
# working directory (where spark.files land).
classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$SPARK_HOME/jars/*"
if [ -n "${SPARK_CLASSPATH:-}" ]; then
	classpath="$SPARK_CLASSPATH:$classpath"
fi
if [ -n "${HADOOP_CONF_DIR:-}" ]; then
	classpath="$HADOOP_CONF_DIR:$classpath"
fi
if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then
	classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${SPARK_DIST_CLASSPATH:-}" ]; then
	classpath="$classpath:$SPARK_DIST_CLASSPATH"
fi
classpath="$classpath:$PWD"

case "${1:-}" in
executor)
	shift
	# SPARK_JAVA_OPT_<n>, in the order of n.
	opts=()
	while read -r name; do
		[ -n "$name" ] && opts+=("${!name}")
	done < <(compgen -v SPARK_JAVA_OPT_ | sort -t _ -k 4 -n)
	exec tini -s -- "$java" "${opts[@]}" \
		-Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
		-cp "$classpath" \
		org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
		--driver-url "$SPARK_DRIVER_URL" \
		--executor-id "$SPARK_EXECUTOR_ID" \
		--cores "$SPARK_EXECUTOR_CORES" \
		--app-id "$SPARK_APPLICATION_ID" \
		--hostname "$SPARK_EXECUTOR_POD_IP" \
		--resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
		--podName "$SPARK_EXECUTOR_POD_NAME"
	;;
driver)
	shift
	exec tini -s -- "$SPARK_HOME/bin/spark-submit" \
		--conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
		--conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
		--deploy-mode client \
		"$@"
	;;
*)
	exec "$@"
	;;
esac
