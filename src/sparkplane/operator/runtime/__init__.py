"""The operator process: informers, the work queue, workers, the loop and everything it writes.

:mod:`.runner` (``Operator``: informers in, workers out), :mod:`.loop` (one reconcile: read →
decide → commit → act → publish, the write order), :mod:`.actions` (creates, deletes, Events),
:mod:`.leader` and :mod:`.fencing` (the Lease and the per-write fence), :mod:`.sweep`
(leftovers of finished attempts), :mod:`.deletions` (archiving drivers deleted by others),
:mod:`.metrics` (Prometheus) and :mod:`.workqueue` (de-duplicated keys with backoff).
"""
