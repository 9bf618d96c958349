"""Expose MobileNetV2's pooled features as a second output, `features` [N, 1280] float32 (the input of the
final Gemm: global average pool of the last 1x1 conv, ReLU6), beside `logits`. One run of the classifier
then gives the device both the ImageNet classes and the appearance embedding (shared.embedding), and onnxruntime
on the device needs no graph editing. Nothing else changes: logits are bit-identical.

Usage: python add_features_output.py model.onnx [...]   (in place; a model that has the output is left as is)
"""
import sys

import onnx
from onnx import TensorProto, helper

for path in sys.argv[1:]:
    model = onnx.load(path)
    graph = model.graph
    if any(o.name == "features" for o in graph.output):
        print(path, "already has a features output")
        continue
    gemm = next(n for n in graph.node if n.op_type == "Gemm")  # the classifier head, the only Gemm
    graph.node.append(helper.make_node("Identity", [gemm.input[0]], ["features"], name="/features/Identity"))
    graph.output.append(helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 1280]))
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(path, "features <-", gemm.input[0])
