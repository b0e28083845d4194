"""GPUFragmentation: the FGD fragment measure on hand-worked nodes, its args, and placements through the domain
that keep whole GPUs free for the mix's whole-GPU pods where DeviceShare's default would spread."""

import json

import numpy as np
import pytest

from streams.objects.args import ArgsError
from streams.scheduler.plugins.gpufragmentation import FragmentModel, GPUFragmentationArgs
from tests.streams.scheduler.plugins.deviceshare.test_plugin import device, gpu_node
from tests.streams.scheduler.support import applied, decisions, profile_with, run

K = "koordinator.sh/"


def test_fragment_of_one_node_by_hand():
    # Node: GPUs with 1000, 600, 200 milli free, 8 cores free. Mix: half 500-milli shared, half whole GPUs.
    model = FragmentModel((((1000, 500, 1, 0), 1.0), ((1000, 1000, 1, 0), 1.0)))
    gpus = np.array([[1000], [600], [200]])
    # shared 500: only the 200 GPU cannot take it -> 200; whole: 600 + 200 cannot -> 800; F = (200 + 800) / 2
    assert model.fragment(gpus, np.array([8000]))[0] == 500.0
    # no cpu left: every free share is fragment for both shapes
    assert model.fragment(gpus, np.array([0]))[0] == 1800.0
    # a CPU-only shape counts all free GPU as fragment
    assert FragmentModel((((1000, 0, 0, 0), 1.0),)).fragment(gpus, np.array([8000]))[0] == 1800.0


def test_args():
    args = GPUFragmentationArgs.from_config({"typicalPods": [{"cpu": "6", "gpuMilli": 460, "gpus": 1, "weight": 3}]})
    assert args.typical_pods == (((6000, 460, 1, 0), 3.0),)
    with pytest.raises(ArgsError, match="gpuMilli"):
        GPUFragmentationArgs.from_config({"typicalPods": [{"cpu": "1", "gpuMilli": 1500, "gpus": 1}]})
    with pytest.raises(ArgsError, match="weight"):
        GPUFragmentationArgs.from_config({"typicalPods": [{"cpu": "1", "gpuMilli": 100, "gpus": 1, "weight": 0}]})


POD = """
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}}}
    spec:
      containers:
      - resources:
          requests: {{cpu: "1", koordinator.sh/gpu-core: {share}, koordinator.sh/gpu-memory-ratio: {share}}}
"""


def placements(*extra):
    domain, _ = run(gpu_node("a", gpus=2), device("a", gpus=2), gpu_node("b", gpus=2), device("b", gpus=2), *extra)
    _, out = run(*(applied(POD.format(name=f"p{i}", share=50)) for i in range(3)), domain=domain)
    return [(d["nodeName"], json.loads(d["annotations"]["scheduling.koordinator.sh/device-allocated"])["gpu"][0]["minor"])
            for d in decisions(out)]


def test_shared_pods_are_packed_onto_one_gpu_where_koordinators_default_spreads_them():
    assert placements() == [("a", 0), ("b", 0), ("a", 1)]
    mix = {"typicalPods": [{"cpu": "1", "gpuMilli": 500, "gpus": 1, "weight": 1},
                           {"cpu": "1", "gpuMilli": 1000, "gpus": 1, "weight": 1}]}
    fgd = profile_with("GPUFragmentation", mix, score={"enabled": [{"name": "GPUFragmentation", "weight": 1000}]})
    # the second pod fills GPU a/0 (no fragment left); the third breaks a whole GPU either way (a tie on F)
    assert placements(fgd)[:2] == [("a", 0), ("a", 0)]
