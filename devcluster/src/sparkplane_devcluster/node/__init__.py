"""The dev cluster's real node: a kubelet with containerd and runc beside the KWOK nodes.

``plan`` (pure: names, addresses, config files), ``host`` (namespaces, links, sysctls, cgroups,
clean-up), ``realnode`` (start/stop in order). Used by ``sparkplane dev-cluster up --real-node``.
"""
