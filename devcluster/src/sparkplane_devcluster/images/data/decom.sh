#!/bin/bash
# Executor decommissioning hook (Spark's preStop contract when spark.decommission.enabled):
# signal the executor JVM with SIGPWR so it migrates its blocks and exits, then wait for it.
set -u
pid="$(pgrep -o -f KubernetesExecutorBackend || true)"
if [ -z "$pid" ]; then
  echo "decom: no executor process found"
  exit 0
fi
echo "decom: asking executor $pid to decommission"
kill -s PWR "$pid"
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
done
echo "decom: executor $pid exited"
