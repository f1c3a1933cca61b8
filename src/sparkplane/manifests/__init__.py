"""What ``deploy/`` ships, built as data: the Helm chart and the clean-up's CronJob.

Pure builders, one floor above the services whose manifests they gather (operator, staging).
``make deploy`` and ``sparkplane operator manifests --write`` write them out; unit tests check
that the files are current.
"""
