"""What installs the operator: the CRDs, its RBAC and Deployment, and applying them.

:mod:`.crd` (the CRDs from the spec models) and :mod:`.manifests` (least-privilege RBAC and the
Deployment, cluster-wide or namespaced) are pure; :mod:`.install` applies them server-side.
The Helm chart (:mod:`sparkplane.manifests.chart`) is generated from the same functions.
"""
