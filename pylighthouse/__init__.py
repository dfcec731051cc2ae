"""pylighthouse: scheduling as a library, in pure Python.

Describe nodes (resources) and workloads (requirements), choose a strategy,
and learn which workload goes to which node, and why one found no home.
"""
from .bestfit import BestFitDistributor
from .distributors import (BinPackDistributor, Distributor, NodeState,
                           PrioritizedDistributor, RoundRobinDistributor)
from .errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                     LighthouseException, ReentrantCallError, RemovedAPIError,
                     UnknownNameError)
from .explain import Explanation
from .fit import Reason, check_fit
from .model import Node, Workload
from .planning import ScaleDownPlan, ScaleUpPlan, plan_scale_down, plan_scale_up
from .rubric import Rubric

__version__ = "0.3.0"

__all__ = [
    "Node", "Workload", "Rubric",
    "Distributor", "PrioritizedDistributor", "RoundRobinDistributor",
    "BinPackDistributor", "BestFitDistributor", "NodeState", "Explanation", "Reason", "check_fit",
    "plan_scale_up", "plan_scale_down", "ScaleUpPlan", "ScaleDownPlan",
    "LighthouseException", "InvalidInputError", "InvalidTypeError",
    "DuplicateNameError", "UnknownNameError", "ReentrantCallError", "RemovedAPIError",
    "__version__",
]
