#!/bin/bash
# sparkplane's Spark image entrypoint: the contract of Apache Spark's image for Kubernetes.
#   driver ARGS...    spark-submit in client mode inside the driver pod (Spark's driver pod spec
#                     passes --properties-file /opt/spark/conf/spark.properties --class ... here)
#   executor          the KubernetesExecutorBackend, configured by the SPARK_* variables the
#                     driver sets on every executor pod
#   anything else     run as given (pass-through)
# driver and executor run under tini; a root container drops to the spark user (uid 185).
set -eo pipefail

: "${SPARK_HOME:=/opt/spark}"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
fi

# A uid without a passwd entry (runAsUser chosen by the cluster) gets one through nss_wrapper:
# the JVM and Hadoop's user lookup fail without a user name.
passwd_for_uid() {
  local uid gid lib
  uid="$(id -u)"
  gid="$(id -g)"
  getent passwd "$uid" >/dev/null 2>&1 && return 0
  for lib in /usr/lib/*/libnss_wrapper.so /usr/lib/libnss_wrapper.so; do
    [ -s "$lib" ] || continue
    NSS_WRAPPER_PASSWD="$(mktemp)"
    NSS_WRAPPER_GROUP="$(mktemp)"
    printf '%s:x:%s:%s:%s:%s:/bin/false\n' "${SPARK_USER_NAME:-spark}" "$uid" "$gid" \
      "${SPARK_USER_NAME:-anonymous uid}" "$SPARK_HOME" >"$NSS_WRAPPER_PASSWD"
    printf 'spark:x:%s:\n' "$gid" >"$NSS_WRAPPER_GROUP"
    export LD_PRELOAD="$lib" NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP
    return 0
  done
  return 0
}

# The executor's JVM options arrive as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in index order.
java_opts=()
while IFS= read -r name; do
  [ -n "$name" ] && java_opts+=("${!name}")
done < <(compgen -e | grep -E '^SPARK_JAVA_OPT_[0-9]+$' | sort -t_ -k4 -n)

# The executor's class path (an exported SPARK_CLASSPATH keeps its new value, as in Spark's image).
SPARK_CLASSPATH="${SPARK_CLASSPATH:-}:$SPARK_HOME/jars/*"
if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then
  SPARK_CLASSPATH="$SPARK_CLASSPATH:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${HADOOP_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$HADOOP_CONF_DIR:$SPARK_CLASSPATH"
fi
if [ -n "${SPARK_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$SPARK_CONF_DIR:$SPARK_CLASSPATH"
else
  SPARK_CLASSPATH="$SPARK_HOME/conf:$SPARK_CLASSPATH"
fi
SPARK_CLASSPATH="$SPARK_CLASSPATH:$PWD"
if [ -n "${HADOOP_HOME:-}" ] && [ -z "${SPARK_DIST_CLASSPATH:-}" ]; then
  SPARK_DIST_CLASSPATH="$("$HADOOP_HOME/bin/hadoop" classpath)"
  export SPARK_DIST_CLASSPATH
fi
if [ -n "${PYSPARK_PYTHON+x}" ]; then export PYSPARK_PYTHON; fi
if [ -n "${PYSPARK_DRIVER_PYTHON+x}" ]; then export PYSPARK_DRIVER_PYTHON; fi

# The driver's Kubernetes client (fabric8) waits 60 s per request and per connection on this
# image, not Spark's 10 s, unless the application sets spark.kubernetes.driver.requestTimeout /
# connectionTimeout itself. Its first request (the driver GETs its own pod) comes from a cold JVM
# (class loading, JIT, the first TLS handshake): on a loaded 2-core dev machine that took more
# than 10 s and the app failed. The relay it crosses adds milliseconds (docs/benchmarks.md).
DRIVER_API_TIMEOUT_MS=60000
driver_api_timeouts() {
  local props="" key
  while [ $# -gt 0 ]; do
    if [ "$1" = --properties-file ] && [ $# -gt 1 ]; then props="$2"; fi
    shift
  done
  for key in spark.kubernetes.driver.requestTimeout spark.kubernetes.driver.connectionTimeout; do
    if [ -n "$props" ] && grep -qE "^[[:space:]]*${key//./\\.}[[:space:]]*[=:[:space:]]" "$props" \
      2>/dev/null; then
      continue
    fi
    cmd+=(--conf "${key}=${DRIVER_API_TIMEOUT_MS}")
  done
}

as_spark=()
if [ "$(id -u)" = 0 ]; then
  as_spark=(setpriv --reuid=185 --regid=185 --init-groups)
fi

role="${1:-}"
case "$role" in
  driver)
    shift
    cmd=("$SPARK_HOME/bin/spark-submit"
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-}"
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS:-}")
    driver_api_timeouts "$@"
    cmd+=(--deploy-mode client "$@")
    ;;
  executor)
    shift
    cmd=("$JAVA_HOME/bin/java" "${java_opts[@]}"
      "-Xms${SPARK_EXECUTOR_MEMORY:-}" "-Xmx${SPARK_EXECUTOR_MEMORY:-}"
      -cp "$SPARK_CLASSPATH:${SPARK_DIST_CLASSPATH:-}"
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
      --driver-url "${SPARK_DRIVER_URL:-}"
      --executor-id "${SPARK_EXECUTOR_ID:-}"
      --cores "${SPARK_EXECUTOR_CORES:-}"
      --app-id "${SPARK_APPLICATION_ID:-}"
      --hostname "${SPARK_EXECUTOR_POD_IP:-}"
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-}"
      --podName "${SPARK_EXECUTOR_POD_NAME:-}")
    ;;
  *)
    passwd_for_uid
    exec "$@"
    ;;
esac

passwd_for_uid
exec "${as_spark[@]}" tini -s -- "${cmd[@]}"
