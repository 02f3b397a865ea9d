"""Report a training job's progress to Voda, one call per epoch.

Voda puts VODA_PROGRESS_URL and VODA_PROGRESS_TOKEN into every pod of a job
it starts (when the controller runs with --progress-url). From the epoch
times at the worker counts the job ran with, Voda's estimator learns the
job's speedup curve and remaining time, which the speedup- and
remaining-time-driven policies decide with.

Standard library only. Call from one process of the job (rank 0):

    from voda_progress import report, workers_of
    report(epoch=epoch + 1, epoch_seconds=elapsed, workers=workers_of(hvd.size()),
           local_batch=batch, global_batch=batch * hvd.size())

workers counts Voda's workers (pods), not processes: a worker of k GPUs runs
k processes (torchrun's --nproc-per-node, MPI's slots per worker), and Voda
puts k into VODA_GPUS_PER_WORKER; workers_of(world_size) divides by it.

or use VodaProgress (Keras) or ProgressReporter (any loop, PyTorch).
Without the environment variables every call does nothing, so the same
script runs anywhere. A failed report is printed to stderr and never
raises: training goes on.

Jobs that let Voda choose their batch size (spec.batchSize) read it with
batch_size(world_size) at every start, which Voda puts in VODA_BATCH_SIZES
for every worker count, and report their gradient statistics with each
epoch (grad_sqr, grad_var): GradientNoise measures them on a PyTorch DDP
model, from each step's per-process and averaged gradients. gain() is the
progress a step at a larger batch makes, for the learning rate (AdaScale)
and for counting the work done (equivalent_epochs).

From a shell (for tests): python3 voda_progress.py EPOCH EPOCH_SECONDS WORKERS
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

URL_ENV = "VODA_PROGRESS_URL"
TOKEN_ENV = "VODA_PROGRESS_TOKEN"
GPUS_PER_WORKER_ENV = "VODA_GPUS_PER_WORKER"
BATCH_SIZES_ENV = "VODA_BATCH_SIZES"
INITIAL_BATCH_ENV = "VODA_INITIAL_BATCH_SIZE"


def workers_of(processes):
    """Voda's workers (pods) running the given number of processes (ranks,
    world size): processes / the GPUs per worker Voda set, at least 1."""
    try:
        k = max(int(os.environ.get(GPUS_PER_WORKER_ENV, "1")), 1)
    except ValueError:
        k = 1
    return max(int(processes) // k, 1)


def batch_size(processes):
    """The batch Voda chose for the job at its current size, as (global,
    per-process, accumulation steps) with global = per-process × processes
    × accumulation; None when Voda does not choose the job's batch (no
    VODA_BATCH_SIZES, or no entry for this many workers)."""
    table = os.environ.get(BATCH_SIZES_ENV, "")
    n = workers_of(processes)
    for entry in table.split():
        try:
            w, g, l, a = (int(x) for x in entry.split(":"))
        except ValueError:
            continue
        if w == n:
            return g, l, a
    return None


def initial_batch_size(default=None):
    """spec.batchSize.initial: the batch the job's epochs are counted at."""
    try:
        return int(os.environ[INITIAL_BATCH_ENV])
    except (KeyError, ValueError):
        return default


def gain(grad_sqr, grad_var, initial, batch):
    """The progress one step at batch makes, in steps at initial, for
    gradient statistics grad_sqr (|G|²) and grad_var (tr Σ per sample):
    (grad_var/initial + grad_sqr) / (grad_var/batch + grad_sqr), between 1
    and batch/initial (McCandlish et al., 2018). 1 when unknown."""
    if not grad_sqr or grad_sqr <= 0 or grad_var is None or grad_var < 0:
        return 1.0
    return (grad_var / initial + grad_sqr) / (grad_var / batch + grad_sqr)


class GradientNoise:
    """Measures the gradient statistics of a PyTorch DDP model, step by
    step, at no extra communication but one all-reduce per epoch: a
    communication hook sees each process's own gradient (of small_batch
    samples) before the all-reduce and the averaged one (of big_batch)
    after, and E|g_B|² = |G|² + tr(Σ)/B at both sizes gives |G|² and tr(Σ)
    (McCandlish et al., "An Empirical Model of Large-Batch Training", 2018,
    appendix A). Needs two processes or more; with gradient accumulation,
    call it with the samples per process and step (micro-steps included).
    """

    def __init__(self, ddp):
        import torch.distributed as dist
        self._dist = dist
        self._local = 0.0   # this process's |g|², summed over steps
        self._global = 0.0  # the averaged |g|², summed over steps
        self._steps = 0
        self._stepping = False
        ddp.register_comm_hook(self, GradientNoise._hook)

    @staticmethod
    def _hook(state, bucket):
        buf = bucket.buffer()
        state._local += float(buf.pow(2).sum())
        state._stepping = True
        world = state._dist.get_world_size()
        fut = state._dist.all_reduce(buf.div_(world), async_op=True).get_future()

        def done(f):
            t = f.value()[0]
            state._global += float(t.pow(2).sum())
            return t
        return fut.then(done)

    def step(self):
        """Counts a step whose gradients were all-reduced."""
        if self._stepping:
            self._steps += 1
            self._stepping = False

    def take(self, small_batch, big_batch):
        """The statistics since the last call, as (grad_sqr, grad_var), or
        (None, None) when they cannot be estimated (one process, no steps,
        or too few to come out positive). Every process must call it (it
        averages the processes' own gradients)."""
        import torch
        t = torch.tensor([self._local, float(self._steps)], dtype=torch.float64)
        self._dist.all_reduce(t)
        world = self._dist.get_world_size()
        steps = self._steps
        local = float(t[0]) / max(float(t[1]), 1.0)
        big = self._global / max(steps, 1)
        self._local, self._global, self._steps = 0.0, 0.0, 0
        if world < 2 or steps == 0 or big_batch <= small_batch:
            return None, None
        b, B = float(small_batch), float(big_batch)
        sqr = (B * big - b * local) / (B - b)
        var = (local - big) / (1.0 / b - 1.0 / B)
        if not sqr > 0 or not var >= 0:
            return None, None
        return sqr, var


def report(epoch, workers, epoch_seconds=None, step_seconds=None, steps=None,
           local_batch=None, global_batch=None, grad_sqr=None, grad_var=None,
           equivalent_epochs=None, timeout=5.0):
    """Send one epoch's numbers; return the server's answer, or None."""
    url, token = os.environ.get(URL_ENV), os.environ.get(TOKEN_ENV)
    if not url or not token:
        return None
    body = {"epoch": int(epoch), "workers": int(workers),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if grad_sqr is None or grad_var is None:
        grad_sqr = grad_var = None  # both or neither
    for key, value in (("epochSeconds", epoch_seconds), ("stepSeconds", step_seconds),
                       ("steps", steps), ("localBatch", local_batch), ("globalBatch", global_batch),
                       ("gradSqr", grad_sqr), ("gradVar", grad_var), ("equivalentEpochs", equivalent_epochs)):
        if value is not None:
            body[key] = value
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode() or "null")
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")
        print("voda progress: %s: %s" % (e.code, detail.strip()), file=sys.stderr)
    except (urllib.error.URLError, OSError, ValueError) as e:
        print("voda progress: %s" % e, file=sys.stderr)
    return None


class ProgressReporter:
    """Times epochs: call start() when an epoch begins and end(...) when it
    ends (any training loop, PyTorch included)."""

    def __init__(self):
        self._start = None

    def start(self):
        self._start = time.monotonic()

    def end(self, epoch, workers, **kwargs):
        if self._start is None:
            return None
        seconds = time.monotonic() - self._start
        self._start = None
        return report(epoch=epoch, workers=workers, epoch_seconds=seconds, **kwargs)


try:  # Keras, when TensorFlow is installed.
    import tensorflow as _tf

    class VodaProgress(_tf.keras.callbacks.Callback):
        """Keras callback: reports every epoch. workers is a function
        returning the current number of processes (e.g. hvd.size), turned
        into workers with workers_of, so that it stays right across elastic
        resizes."""

        def __init__(self, workers, local_batch=None):
            super().__init__()
            self._workers, self._local_batch = workers, local_batch
            self._timer = ProgressReporter()

        def on_epoch_begin(self, epoch, logs=None):
            self._timer.start()

        def on_epoch_end(self, epoch, logs=None):
            n = self._workers()
            gb = self._local_batch * n if self._local_batch else None
            self._timer.end(epoch + 1, workers_of(n), local_batch=self._local_batch, global_batch=gb,
                            steps=self.params.get("steps") if self.params else None)
except ImportError:
    pass


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    answer = report(epoch=int(sys.argv[1]), epoch_seconds=float(sys.argv[2]), workers=int(sys.argv[3]))
    if answer is None:
        sys.exit(1)
    print(json.dumps(answer))
