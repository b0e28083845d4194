"""``pynvml`` for a host without a GPU: NVML answering for one NVIDIA A100 80GB (``conftest.fake_pynvml``).

With this folder first on ``PYTHONPATH``, the node agent's GPU collector (``node_agent.collectors.gpu``) imports
this module instead of the NVML binding, so an agent process reports the GPU in its Device and NodeMetric as it
would a real one: the Device is faked at the collector, and everything after it (the Device on the API server,
the scheduler's allocation, the pod's ``device-allocated``) is the product's.
"""

from tests.node_agent.conftest import fake_pynvml

globals().update(vars(fake_pynvml(count=1)))
