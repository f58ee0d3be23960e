"""torch.distributed set-up for multi-GPU (or multi-process CPU) training.

``torchrun --nproc_per_node=N -m nmtmodels.cli train ...`` sets RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT; :func:`init_from_env` then joins the process
group with ``init_method="env://"`` (NCCL on CUDA, gloo on CPU).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistributedContext:
    """This process's place in the job (rank 0 of 1 when not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_from_env(device_type: str | None = None) -> DistributedContext:
    """Join the process group described by torchrun's environment variables, if any."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistributedContext()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if device_type is None:
        device_type = "cuda" if torch.cuda.is_available() else "cpu"
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo", init_method="env://")
    return DistributedContext(rank=rank, world_size=world_size, local_rank=local_rank)


def all_reduce_sum(tensor: torch.Tensor, ctx: DistributedContext) -> torch.Tensor:
    """Sum ``tensor`` over ranks in place (no-op without distribution)."""
    if ctx.enabled:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def broadcast_object(obj: Any, ctx: DistributedContext, src: int = 0) -> Any:
    """Rank ``src``'s ``obj`` on every rank (picklable objects)."""
    if not ctx.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def all_gather_object(obj: Any, ctx: DistributedContext) -> list[Any]:
    """Every rank's ``obj``, in rank order."""
    if not ctx.enabled:
        return [obj]
    out: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(out, obj)
    return out


def barrier(ctx: DistributedContext) -> None:
    if ctx.enabled:
        dist.barrier()
