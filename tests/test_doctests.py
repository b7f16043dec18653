"""The examples in the library's docstrings run and print what they say (closed forms where they
state numbers: ring all-reduce times, nccl-tests factors, units)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "fabricsim.collectives.algorithm", "fabricsim.collectives.memory", "fabricsim.collectives.api", "fabricsim.collectives.verify",
    "fabricsim.engine.simulator", "fabricsim.network.analytical", "fabricsim.network.flow", "fabricsim.network.model",
    "fabricsim.network.analytical.timing",
    "fabricsim.report.tables", "fabricsim.system.npu", "fabricsim.topology.spec", "fabricsim.train", "fabricsim.units", "fabricsim.limits",
    "fabricsim.vocab", "fabricsim.workload.models", "fabricsim.workload.parallelism", "fabricsim.experiments.base",
    "fabricsim.system.resources", "fabricsim.system.policies", "fabricsim.system.ace", "fabricsim.system.endpoint",
    "fabricsim.engine.pricing", "fabricsim.sections", "fabricsim.roofline",
    "fabricsim.optimize.perms", "fabricsim.optimize.finder", "fabricsim.optimize.cost",
    "fabricsim.optimize.rings", "fabricsim.optimize.matchings", "fabricsim.optimize.prices",
    "fabricsim.topology.core", "fabricsim.topology.builders.dgx_params",
    "fabricsim.topology.builders.wafer", "fabricsim.workload.strategy", "fabricsim.workload.megatron",
    "fabricsim.system.compute", "fabricsim.system.gpus", "fabricsim.workload.memory", "fabricsim.topology.builders.dgx",
    "fabricsim.workload.memory_model",
    "fabricsim.collectives.nvls", "fabricsim.collectives.nccl_ring", "fabricsim.collectives.nccl_tree",
    "fabricsim.network.lowering.quotient", "fabricsim.ir.facts", "fabricsim.ir.schedule", "fabricsim.ir.step",
    "fabricsim.network.lowering.plans", "fabricsim.system.optimizer", "fabricsim.workload.fp8",
    "fabricsim.workload.memory_block",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
