"""Start-up cost of the ``sparkplane`` process: the ``kubernetes`` package without its eager
``__init__``.

``kubernetes/__init__.py`` imports every sub-package, ``kubernetes.config`` among them, which
pulls in requests, requests-oauthlib, oauthlib and python-dateutil: about 0.1-0.15 s of a
command's start on this machine kind (``benchmarks/cli_startup.py``). sparkplane reads
kubeconfigs itself (:mod:`sparkplane.kube.config`) and needs ``kubernetes.client`` (whose
models load lazily) and, only for ``exec``/``auth-provider`` users or inside a pod, the
official loader. :func:`lazy_kubernetes` registers the package as a module with the real
package's ``__path__`` whose sub-packages load on first attribute access (PEP 562), so
``import kubernetes.config`` and ``kubernetes.config`` both still work, later.

Installed by :mod:`sparkplane.cli` (the command-line process only, before anything imports
``kubernetes``): a program that imports the library gets the real package, untouched. Must not
import anything heavy itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

SUBPACKAGES = frozenset(
    {"client", "config", "dynamic", "watch", "stream", "utils", "leaderelection", "informer"}
)


def lazy_kubernetes() -> bool:
    """Register the lazy ``kubernetes`` package; False if it is imported already or missing."""
    if "kubernetes" in sys.modules:
        return False
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or not spec.submodule_search_locations:
        return False
    package = types.ModuleType("kubernetes", "The kubernetes package, sub-packages on first use.")
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__package__ = "kubernetes"

    def load(name: str) -> object:
        if name in SUBPACKAGES:
            return importlib.import_module(f"kubernetes.{name}")
        if name == "__version__":
            from importlib.metadata import version

            return version("kubernetes")
        raise AttributeError(f"module 'kubernetes' has no attribute {name!r}")

    package.__getattr__ = load  # type: ignore[method-assign]
    sys.modules["kubernetes"] = package
    return True
