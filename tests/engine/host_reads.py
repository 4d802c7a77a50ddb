"""The counters of what a round costs the host (`specviz.engine.decoding.counting`: host reads, operations outside the
regions a CUDA graph replays, torch calls from specviz's code), as the engine tests import them."""
from specviz.engine.decoding.counting import SYNCING_OPS, counting_calls, counting_ops, host_reads

__all__ = ["SYNCING_OPS", "counting_calls", "counting_ops", "host_reads"]
