"""The use-case layer under the CLI and the Python API.

``sources`` resolves an input (spec, spark-submit argv, template) into one Source;
``connection`` opens the cluster connection and picks the default namespace (kubectl's rules);
``submission`` dispatches a Source to the right submit path for each mode; ``waiting`` holds
the wait conditions and waiting for many apps at once. :class:`sparkplane.SparkPlane` composes
them, one method per use-case, and the CLI only calls ``SparkPlane`` (an import-linter contract
keeps ``sparkplane.cli``'s application commands away from ``sparkplane.kube``).
"""
