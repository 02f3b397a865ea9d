"""Elastic PyTorch DDP training under torchrun, as Voda runs it.

Voda starts one pod per worker; in each, torchrun (configured by the
training-operator through PET_* variables: c10d rendezvous on worker 0,
--nnodes=MIN:MAX, --nproc-per-node=GPUs per worker) starts one process per
GPU. When Voda resizes the job, torchrun stops every process, re-forms the
group with the new members and starts them again: this script therefore
keeps its state in a checkpoint on storage all workers share, writes it
after every epoch (rank 0), and resumes from it at every start.

The global batch stays fixed whatever the number of workers (each process
takes global_batch / world_size samples per step), as Voda's speedup model
assumes, so a resize changes the speed, not the result. Progress goes to
Voda through voda_progress.py (examples/progress), once per epoch from
rank 0, in workers (pods): world_size / GPUs per worker.

The model and data are synthetic (a small MLP on seeded random data), so
the example runs anywhere, CPU included:

    torchrun --standalone --nproc-per-node=2 train.py --epochs 2 --checkpoint /tmp/state.pt
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from voda_progress import ProgressReporter, workers_of


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--steps-per-epoch", type=int, default=100)
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--checkpoint", default="/checkpoint/state.pt",
                   help="shared path of the checkpoint written every epoch and read at every start")
    return p.parse_args(argv)


def model():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))


def batch(epoch, step, rank, world, size, device):
    """The samples of one process at one step: a slice of the global batch,
    the same for any number of processes."""
    g = torch.Generator().manual_seed(epoch * 1_000_003 + step)
    x = torch.randn(size * world, 64, generator=g)
    y = torch.randint(0, 10, (size * world,), generator=g)
    lo = rank * size
    return x[lo:lo + size].to(device), y[lo:lo + size].to(device)


def load(path, net, opt):
    """Restores the last checkpoint, if any; returns the next epoch."""
    if not os.path.exists(path):
        return 0
    state = torch.load(path, map_location="cpu")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return state["epoch"]


def save(path, net, opt, epoch):
    """Writes the checkpoint atomically: a resize may kill us mid-write."""
    tmp = path + ".tmp"
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch}, tmp)
    os.replace(tmp, path)


def main(argv=None):
    args = parse(argv)
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")  # env:// from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    net = model().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    start = load(args.checkpoint, net, opt)  # every process, after every rendezvous
    # Rank 0's word is final: DDP broadcasts its weights at construction, and
    # its epoch is broadcast here, so a worker that could not read the
    # checkpoint (a new node, storage not yet visible) still joins in step.
    epoch = torch.tensor([start], dtype=torch.int64, device=device)
    dist.broadcast(epoch, src=0)
    start = int(epoch.item())
    ddp = DistributedDataParallel(net, device_ids=[local] if cuda else None)
    size = max(args.global_batch // world, 1)
    loss_fn = nn.CrossEntropyLoss()
    timer = ProgressReporter()
    if rank == 0:
        print("starting at epoch %d with %d processes (%d workers)" % (start, world, workers_of(world)), flush=True)

    for epoch in range(start, args.epochs):
        timer.start()
        began = time.monotonic()
        for step in range(args.steps_per_epoch):
            x, y = batch(epoch, step, rank, world, size, device)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
        if rank == 0:
            save(args.checkpoint, net, opt, epoch + 1)
            timer.end(epoch + 1, workers_of(world), steps=args.steps_per_epoch,
                      local_batch=size, global_batch=size * world)
            print("epoch %d: loss %.4f, %.2fs" % (epoch + 1, loss.item(), time.monotonic() - began), flush=True)
        dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
