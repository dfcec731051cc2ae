"""Elastic clusters: a manager that grows and shrinks a cluster as work comes and goes.

The names below are imported from ``pylighthouse.elastic`` (not from the top
package, which stays a scheduling library with no threads, files or sockets).
"""
from .manager import API_VERSION, DEFAULT_INTERVALS, CycleReport, ElasticManager
from .provider import CREATING, FAILED, READY, Provider, ProviderError, SimulatedProvider
from .rpc import BADARGS, ERROR, SUCCESS, RPCServer, serve_rpc
from .store import StoreError

__all__ = ["ElasticManager", "CycleReport", "Provider", "SimulatedProvider", "ProviderError",
           "StoreError", "serve_rpc", "RPCServer", "API_VERSION", "DEFAULT_INTERVALS",
           "CREATING", "READY", "FAILED", "SUCCESS", "BADARGS", "ERROR"]
