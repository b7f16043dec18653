"""The validation configs of today's models (`configs/validation/modern/`, issue 43) load, use
exactly their network's GPUs, and each names one published row of
`configs/validation/modern_published.yaml` (`benchmarks/validate_modern.py` reads the published
figure from there, so a config without a unique row would compare against nothing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from fabricsim.topology.spec import topology_npus
from fabricsim.train import load_train_config, strategy_of

ROOT = Path(__file__).resolve().parents[1]


def _script():
    path = ROOT / "benchmarks" / "validate_modern.py"
    sys.path.insert(0, str(path.parent))  # its `_results` import
    try:
        spec = importlib.util.spec_from_file_location("validate_modern", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


VM = _script()
ENTRIES = yaml.safe_load(VM.PUBLISHED.read_text())


@pytest.mark.parametrize("name,want", VM.ROWS, ids=[f"{n}-{w.get('source', w['gpus'])}" for n, w in VM.ROWS])
def test_each_row_has_one_published_entry_and_its_gpus(name, want):
    entry = VM.published_entry(ENTRIES, want)
    cfg = load_train_config(VM.CONFIGS / name)
    st = strategy_of(cfg)
    assert st.npus == entry["gpus"] == topology_npus(cfg.network.topology)
    par = entry["parallelism"]
    assert (st.mp, st.pp) == (par["tp"], par["pp"]) and st.cp == (par.get("cp") or 1)
    assert st.batch == entry["global_batch"]
    assert (entry.get("tflops_per_gpu") or entry.get("tokens_per_s_per_gpu")) is not None


def test_every_config_in_the_folder_is_compared():
    assert {p.name for p in VM.CONFIGS.glob("*.yaml")} == {n for n, _ in VM.ROWS}
