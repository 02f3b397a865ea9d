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

A job with spec.batchSize lets Voda choose the batch instead: at every
start the script reads it for its world size from VODA_BATCH_SIZES
(global, per process, accumulation steps), measures the gradient noise
(GradientNoise) and reports it with each epoch. An epoch is a fixed number
of samples (--steps-per-epoch steps at the initial batch, --global-batch
or VODA_INITIAL_BATCH_SIZE), so a larger batch takes fewer, larger steps;
each step counts for gain() steps at the initial batch, training ends when
--epochs epochs' worth is done, and the learning rate is scaled by the
same gain: AdaScale (Johnson et al., ICML 2020), which is linear scaling
where the gradient noise dominates and none where it does not, the same
statistical efficiency Voda chooses the batch by. (The square-root rule
ignores the noise, and linear scaling overshoots once the noise scale is
below the batch.)

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

from voda_progress import GradientNoise, ProgressReporter, batch_size, gain, initial_batch_size, workers_of


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
    """Restores the last checkpoint, if any; returns the next epoch, the
    work done (epochs at the initial batch) and the gradient statistics."""
    if not os.path.exists(path):
        return 0, 0.0, None, None
    state = torch.load(path, map_location="cpu")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return state["epoch"], state.get("done", float(state["epoch"])), state.get("sqr"), state.get("var")


def save(path, net, opt, epoch, done, sqr, var):
    """Writes the checkpoint atomically: a resize may kill us mid-write."""
    tmp = path + ".tmp"
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch,
                "done": done, "sqr": sqr, "var": var}, tmp)
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
    start, done, sqr, var = load(args.checkpoint, net, opt)  # every process, after every rendezvous
    # Rank 0's word is final: DDP broadcasts its weights at construction, and
    # its progress is broadcast here, so a worker that could not read the
    # checkpoint (a new node, storage not yet visible) still joins in step.
    state = torch.tensor([start, done, sqr or 0.0, var if var is not None else -1.0], dtype=torch.float64)
    dist.broadcast(state, src=0)
    start, done = int(state[0].item()), float(state[1].item())
    sqr = float(state[2].item()) or None
    var = float(state[3].item()) if state[3].item() >= 0 else None
    ddp = DistributedDataParallel(net, device_ids=[local] if cuda else None)

    initial = initial_batch_size(args.global_batch)
    chosen = batch_size(world)  # Voda's, for a job with spec.batchSize
    if chosen:
        total, size, accumulate = chosen
    else:
        total, size, accumulate = args.global_batch, max(args.global_batch // world, 1), 1
        total = size * world
    noise = GradientNoise(ddp) if chosen and world > 1 else None
    # An epoch is steps_per_epoch steps' samples at the initial batch.
    steps = max(args.steps_per_epoch * initial // total, 1) if chosen else args.steps_per_epoch
    loss_fn = nn.CrossEntropyLoss()
    timer = ProgressReporter()
    if rank == 0:
        print("starting at epoch %d with %d processes (%d workers), %.2f epochs done, batch %d (%d per process × %d accumulation steps)"
              % (start, world, workers_of(world), done, total, size, accumulate), flush=True)

    epoch = start
    while done < args.epochs - 1e-9 and epoch < 100 * args.epochs:
        timer.start()
        began = time.monotonic()
        g = gain(sqr, var, initial, total) if chosen else 1.0
        for group in opt.param_groups:
            group["lr"] = args.lr * g  # AdaScale: the learning rate times the gain
        for step in range(steps):
            opt.zero_grad()
            for micro in range(accumulate):
                x, y = batch(epoch, step * accumulate + micro, rank, world, size, device)
                if micro < accumulate - 1:
                    with ddp.no_sync():
                        (loss_fn(ddp(x), y) / accumulate).backward()
                else:
                    loss = loss_fn(ddp(x), y) / accumulate
                    loss.backward()
            if noise:
                noise.step()
            opt.step()
        epoch += 1
        done += steps * g / args.steps_per_epoch if chosen else 1.0
        new_sqr = new_var = None
        if noise:
            new_sqr, new_var = noise.take(size * accumulate, total)
            if new_sqr is not None:
                # Each epoch's statistics weigh as much as all earlier ones.
                sqr = new_sqr if sqr is None else (sqr + new_sqr) / 2
                var = new_var if var is None else (var + new_var) / 2
        if rank == 0:
            save(args.checkpoint, net, opt, epoch, done, sqr, var)
            timer.end(epoch, workers_of(world), steps=steps, local_batch=size, global_batch=total,
                      grad_sqr=new_sqr, grad_var=new_var, equivalent_epochs=done if chosen else None)
            print("epoch %d: loss %.4f, %.2fs, %.2f epochs done" % (epoch, loss.item() * accumulate, time.monotonic() - began, done),
                  flush=True)
        dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
