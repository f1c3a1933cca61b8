"""Per-kind adapters: what each custom-resource kind observes and how it decides.

:mod:`.adapter` is the interface the loop drives (``Adapter``, ``Watch``, ``Key``);
:mod:`.app_adapter` (SparkApplication), :mod:`.cluster_io` (SparkCluster) and
:mod:`.scheduled_io` (ScheduledSparkApplication) implement it over the informers' caches and the
pure core's decide functions; :mod:`.podtemplates` reads ``podTemplateFile`` from the one
directory allowed. Adapters read (caches, the odd live read) and never write.
"""
