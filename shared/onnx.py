"""The ONNX Runtime session every model of ours runs in, on the device and in the cloud: explicit thread counts
(the default grabs every core, which starves the capture and the other cameras on a Pi) and the usable providers."""

from __future__ import annotations

import logging
from typing import Any

from .modelfiles import ModelError, ModelFile

log = logging.getLogger(__name__)


def usable_providers(requested: list[str], available: list[str]) -> list[str]:
    """The requested providers this onnxruntime build has, in order, with CPU last; a missing one is
    named in a warning so an operator who asked for an NPU knows the CPU is doing the work."""
    usable = [p for p in requested if p in available and p != "CPUExecutionProvider"]
    missing = [p for p in requested if p not in available]
    if missing:
        log.warning("onnxruntime here has no %s (available: %s); using %s", ", ".join(missing),
                    ", ".join(available), ", ".join([*usable, "CPUExecutionProvider"]))
    return [*usable, "CPUExecutionProvider"]


def open_session(model: ModelFile, threads: int, providers: list[str], spin: bool = False) -> Any:
    """An onnxruntime session with `threads` intra-op threads, no busy-waiting unless `spin`, and the usable
    providers; ModelError (one line) for a file onnxruntime cannot load."""
    import onnxruntime as ort  # an extra (edge, cloud); imported here so config-only users need no runtime

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # A memory pattern is planned per input shape and its buffers kept: our models see many shapes (closer
    # looks, crops), and without it the replay's peak RSS was 6.6 MB lower at the same CPU time (issue 39).
    options.enable_mem_pattern = False
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    chosen = usable_providers(providers, ort.get_available_providers())
    try:
        return ort.InferenceSession(str(model.path), options, providers=chosen)
    except Exception as exc:  # onnxruntime raises its own exception types for unloadable graphs
        raise ModelError(f"model {model.name!r}: onnxruntime cannot load {model.path}: {exc}; "
                         "check the onnxruntime version (>= 1.16) or restore the shipped file") from None
