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


def workers_of(processes):
    """Voda's workers (pods) running the given number of processes (ranks,
    world size): processes / the GPUs per worker Voda set, at least 1."""
    try:
        k = max(int(os.environ.get(GPUS_PER_WORKER_ENV, "1")), 1)
    except ValueError:
        k = 1
    return max(int(processes) // k, 1)


def report(epoch, workers, epoch_seconds=None, step_seconds=None, steps=None,
           local_batch=None, global_batch=None, timeout=5.0):
    """Send one epoch's numbers; return the server's answer, or None."""
    url, token = os.environ.get(URL_ENV), os.environ.get(TOKEN_ENV)
    if not url or not token:
        return None
    body = {"epoch": int(epoch), "workers": int(workers),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for key, value in (("epochSeconds", epoch_seconds), ("stepSeconds", step_seconds),
                       ("steps", steps), ("localBatch", local_batch), ("globalBatch", global_batch)):
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
