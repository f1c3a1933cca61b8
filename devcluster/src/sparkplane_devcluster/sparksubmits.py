"""``python -m sparkplane_devcluster.sparksubmits``: every supported Spark version's spark-submit.

Installs (once; cached by its lock) the distribution of each Spark version in
``sparkplane.version.SPARK_VERSIONS`` (:mod:`sparkplane_devcluster.images.sparkdist`) and prints
``<version> <SPARK_HOME>`` for each. ``make integration`` runs it before pytest: the parity tests
run each version's real spark-submit, and a cold install (minutes) would not fit a test's timeout.
"""

from __future__ import annotations


def main() -> int:
    from sparkplane.version import SPARK_VERSIONS
    from sparkplane_devcluster.cluster import default_cache_dir
    from sparkplane_devcluster.images import sparkdist

    cache = default_cache_dir()
    for version in SPARK_VERSIONS:
        print(f"{version} {sparkdist.ensure(cache, version, print).root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
