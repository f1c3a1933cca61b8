"""The operator's pure core: the state table, the decide functions and the builders.

No I/O (an import-linter contract keeps the gateway, HTTP and asyncio out): each module takes
plain dicts and a clock and returns data. :mod:`.states` (the state table as data, the status
history), :mod:`.decision` (the typed result of a reconcile), :mod:`.reconciler` (``decide``
for SparkApplications), :mod:`.observe` (reading the driver pod), :mod:`.driver` and
:mod:`.naming` (an attempt's objects and names), :mod:`.bounds` (the operator's limits applied),
:mod:`.cluster`, :mod:`.cluster_build`, :mod:`.cluster_spec`, :mod:`.cluster_health` and
:mod:`.standalone_auth` (SparkCluster), :mod:`.scheduled` and :mod:`.scheduled_spec`
(ScheduledSparkApplication), :mod:`.settings` (every setting, merged in one place) and
:mod:`.diagram` (docs/state-machine.md from the table).
"""
