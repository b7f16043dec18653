"""The optimizer step as memory-bound kernels: Adam's bytes per parameter (`adam_step_bytes`) and
Megatron-LM's mixed-precision step kernel by kernel (`megatron_optimizer_step`), priced by the
compute model (`system.compute.Memory`). Apart from the compute model so that each reads in one
sitting.
"""

from __future__ import annotations

import math

from .compute import Memory, _real


def adam_step_bytes(params: float, param_bytes: float = 2, grad_bytes: float = 4, master_bytes: float = 4,
                    state_bytes: float = 8) -> float:
    """Bytes the mixed-precision Adam step reads and writes, as Megatron-LM runs it.

    Megatron-LM keeps fp32 main gradients, fp32 master weights and two fp32 moments. The step reads
    the gradient (4), reads and writes the master weight (2 x 4), reads and writes both moments
    (2 x 8, state_bytes being the two 4-byte moments) and writes the fp16/bf16 weight (2):
    4 + 8 + 16 + 2 = 30 bytes per parameter with the defaults. Gradient-norm clipping (another
    read of the gradients) and zeroing the gradient buffers are left out.

    Parameters
    ----------
    params : float
        Parameters this GPU updates (its shard), >= 0.
    param_bytes, grad_bytes, master_bytes, state_bytes : float
        Bytes per parameter of the model weight, main gradient, master weight and both moments.

    Returns
    -------
    float
        params x (grad + 2 master + 2 state + param), bytes.

    Examples
    --------
    >>> adam_step_bytes(1e9) / 1e9
    30.0
    """
    _real("params", params, lambda v: 0 <= v < math.inf, "accepted: a finite parameter count >= 0")
    return params * (grad_bytes + 2 * master_bytes + 2 * state_bytes + param_bytes)


def megatron_optimizer_step(params: float, loss_scaling: bool = True) -> tuple[Memory, ...]:
    """Megatron-LM's optimizer step over `params` parameters, kernel by kernel (memory-bound).

    What `Float16OptimizerWithFloat16Params.step` and `train_step` run per iteration with fp32 main
    gradients accumulated in place (NVIDIA/Megatron-LM at 2755bcb, June 2022, the code of
    Korthikanti et al. 2022: megatron/optimizer/optimizer.py, clip_grads.py, training.py), in bytes
    per parameter: with fp16's loss scaling, unscale and check for inf/nan
    (`_amp_foreach_non_finite_check_and_unscale_`: read and write the fp32 gradient, 8); the
    gradient norm for clipping (`multi_tensor_l2norm`: read, 4; the scaling that follows runs only
    when the norm exceeds the limit, left out); Apex's fused Adam on the fp32 main parameters (read
    gradient, parameter and both moments, write parameter and moments: 28); copying the main
    parameters to the fp16/bf16 model (read 4, write 2: 6); zeroing the gradient buffer for the next
    iteration (`zero_grad_buffer`: write 4). 50 bytes per parameter with loss scaling (fp16), 42
    without (bf16).

    Parameters
    ----------
    params : float
        Parameters this GPU updates, >= 0.
    loss_scaling : bool
        fp16's dynamic loss scaling (bf16 runs without it).

    Returns
    -------
    tuple of Memory
        The step's kernels in order.

    Examples
    --------
    >>> sum(k.nbytes for k in megatron_optimizer_step(1e9)) / 1e9, sum(k.nbytes for k in megatron_optimizer_step(1e9, False)) / 1e9
    (50.0, 42.0)
    """
    _real("params", params, lambda v: 0 <= v < math.inf, "accepted: a finite parameter count >= 0")
    steps = ((("unscale and inf check", 8),) if loss_scaling else ()) + (
        ("gradient norm", 4), ("adam", adam_step_bytes(1, param_bytes=0)),  # fp32 main parameters: no 16-bit write
        ("copy main to model parameters", 6), ("zero gradient buffer", 4))
    return tuple(Memory(params * per, name) for name, per in steps)


__all__ = ["adam_step_bytes", "megatron_optimizer_step"]
